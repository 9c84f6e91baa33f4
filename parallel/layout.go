package parallel

// layout places the trainable parameters in the flat buffer and in
// gradient buckets. All sizes are in elements.
//
// Buckets are formed walking the parameters backwards (the order backward
// produces their gradients), each holding whole parameters up to the cap:
// bucket 0 holds the last parameters. The parameters of one layer (names
// that differ only after the last dot: a weight and its bias, which one
// backward step produces together) stay in one bucket even past the cap,
// so that buckets fill one after the other. In the flat buffer the buckets lie in
// parameter order (bucket K−1 first), each bucket's parameters in parameter
// order followed by its padding. Sharded (ZeRO), bucket k of u_k parameter
// elements is padded to size_k = N·⌈u_k/N⌉ and cut into N pieces of
// piece_k = ⌈u_k/N⌉: rank r owns piece r of every bucket, so the
// reduce-scatter and all-gather of a bucket move equal parts for every rank.
// Rank r's shard is the concatenation of its pieces, in bucket order:
// shard = Σ_k piece_k elements.
type layout struct {
	params  []pslot
	buckets []bucket
	total   int // Ψ′: elements of the flat buffer, Σ_k size_k
	shard   int // Σ_k piece_k (sharded), else 0
}

// pslot is one trainable parameter's place.
type pslot struct {
	n      int // elements
	bucket int
	off    int // offset inside its bucket
}

// bucket is one group of parameters whose gradients are reduced together.
type bucket struct {
	params   []int // indices of its parameters, in parameter order
	used     int   // u_k: elements of its parameters
	size     int   // its extent in the flat buffer: u_k, or N·⌈u_k/N⌉ sharded
	piece    int   // ⌈u_k/N⌉ sharded, else 0
	start    int   // its offset in the flat buffer
	shardOff int   // the offset of this rank's piece in the shard
}

// newLayout builds the layout of parameters of the given sizes and layer
// names, for buckets of at most capacity elements (a layer larger than
// that gets a bucket of its own) over n ranks, padded and cut into pieces
// when sharded.
func newLayout(sizes []int, layers []string, capacity, n int, sharded bool) layout {
	capacity = max(capacity, 1)
	l := layout{params: make([]pslot, len(sizes))}
	var cur *bucket
	for i := len(sizes) - 1; i >= 0; i-- {
		sameLayer := i+1 < len(sizes) && layers[i] == layers[i+1]
		if cur == nil || cur.used > 0 && cur.used+sizes[i] > capacity && !sameLayer {
			l.buckets = append(l.buckets, bucket{})
			cur = &l.buckets[len(l.buckets)-1]
		}
		cur.params = append([]int{i}, cur.params...)
		cur.used += sizes[i]
	}
	for k := range l.buckets {
		b := &l.buckets[k]
		b.size = b.used
		if sharded {
			b.piece = (b.used + n - 1) / n
			b.size = n * b.piece
			b.shardOff = l.shard
			l.shard += b.piece
		}
	}
	for k := len(l.buckets) - 1; k >= 0; k-- {
		b := &l.buckets[k]
		b.start = l.total
		off := 0
		for _, i := range b.params {
			l.params[i] = pslot{n: sizes[i], bucket: k, off: off}
			off += sizes[i]
		}
		l.total += b.size
	}
	return l
}
