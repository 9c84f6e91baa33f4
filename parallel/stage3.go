package parallel

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
)

// Stage 3: each rank keeps only its piece of every bucket of the flat
// parameter buffer (the shard, tagged parameter); the model's parameters
// are leaves without storage (autograd's Unbind) that are bound to a
// gathered copy of their bucket (tagged communication) while ops use them.
//
//   - An op that uses an unbound parameter runs its fetch function: the
//     bucket is all-gathered from every rank's piece and all its
//     parameters are bound to views of the gathered buffer. One bucket is
//     gathered at a time: gathering one first frees the one gathered
//     before (the layers of a bucket run one after the other).
//   - An op that saves a parameter for backward (Linear, Conv2d and the
//     norms save their weight) saves a reference through the parameter's
//     saved-tensor hooks instead of its storage, so the freed bucket stays
//     freed. Backward's first use of a reference gathers the bucket again
//     (freeing the one gathered before); the bucket is also freed as soon
//     as its last reference has been used.
//   - Under autocast the 16-bit cast of a parameter lives while the
//     parameter is bound (autograd frees it on Unbind and casts again on
//     the next use, saving it by reference through the same hooks), so
//     only the gathered bucket's casts are held, never the whole model's.
//   - Gradients are reduce-scattered bucket by bucket into the rank's
//     gradient shard exactly as under stage 2, and the optimizer updates
//     the rank's pieces: there is no all-gather after the step, since the
//     next forward gathers what it uses.
//
// Every collective goes through the rank's communication goroutine, in the
// order the training goroutine asks for them, so that gathers inside
// backward keep their place among the reduce-scatters on every rank.

// ref is a saved parameter packed by reference: its index.
type ref int

// shardParams fills this rank's shard with rank 0's parameters, a bucket
// at a time — a buffer of the bucket's size_k elements, the parameters
// copied in, broadcast from rank 0, this rank's piece copied out, freed —
// so that beside the model and the shard only one bucket is held (tagged
// communication; NewDDP's caller resets the peaks). The model is unchanged
// until every bucket is done; then its parameters are unbound (their
// storage freed) and get their fetch functions and saved-tensor hooks.
func (d *DDP) shardParams() error {
	n, r := d.comm.Size(), d.comm.Rank()
	for k, b := range d.lay.buckets {
		var buf *autograd.Tensor
		err := autograd.Try(func() {
			buf = autograd.New(d.dev, d.dt, device.Communication, b.size)
			buf.Block().Relabel(fmt.Sprintf("shard_bucket%d", k), "ddp")
			for _, i := range b.params {
				v := view(buf, d.lay.params[i].off, d.params[i].Shape())
				v.CopyFrom(d.params[i])
				v.Release()
			}
		})
		if err == nil {
			err = d.comm.Broadcast(buf, 0)
		}
		if err == nil {
			err = autograd.Try(func() {
				v := view(buf, r*b.piece, []int{b.piece})
				d.srcs[k].CopyFrom(v)
				v.Release()
			})
		}
		if buf != nil {
			buf.Release()
		}
		if err != nil {
			return fmt.Errorf("bucket %d of %d over %d ranks: %w", k, len(d.lay.buckets), n, err)
		}
	}
	d.unbind()
	return nil
}

// initShard writes this rank's pieces of the deferred parameters from
// their records (computed alone, nn.Init). The padding stays zero.
// Nothing but the shard is allocated, and no rank communicates.
func (d *DDP) initShard() {
	_ = d.eachPart(func(k, i, at, from, n int) error {
		in, _ := d.deferred(i)
		v := view(d.srcs[k], at, []int{n})
		in.Write(v, from)
		v.Release()
		return nil
	})
}

// eachPart calls f for every part of a parameter inside this rank's
// pieces, stopping at its first error. Piece r of bucket k covers elements
// [r·piece_k, (r+1)·piece_k) of the bucket; the part of it inside
// parameter i (at offset off_i, of n_i elements) is its elements [from,
// from+n), from = max(off_i, r·piece_k) − off_i, which lie at element at
// of the piece (srcs[k]).
func (d *DDP) eachPart(f func(k, i, at, from, n int) error) error {
	r := d.comm.Rank()
	for k, b := range d.lay.buckets {
		lo, hi := r*b.piece, (r+1)*b.piece
		for _, i := range b.params {
			ps := d.lay.params[i]
			if a, e := max(ps.off, lo), min(ps.off+ps.n, hi); a < e {
				if err := f(k, i, a-lo, a-ps.off, e-a); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// unbind drops the parameters' storage (deferred ones have none) and
// gives them their fetch functions and saved-tensor hooks.
func (d *DDP) unbind() {
	d.full, d.refs, d.cur = make([]*autograd.Tensor, len(d.lay.buckets)), make([]int, len(d.lay.buckets)), -1
	for i, p := range d.params {
		p.ZeroGrad()
		p.Unbind()
		p.SetFetch(d.fetch)
		p.SetSavedHooks(d.savedHooks(i))
	}
}

// fetch binds an unbound parameter that an op (or a read) uses: its
// bucket is gathered.
func (d *DDP) fetch(leaf *autograd.Tensor) {
	d.gather(d.lay.params[d.index[leaf]].bucket)
}

// gather frees the bucket gathered before, all-gathers bucket k into a
// buffer of size_k elements (tagged communication) and binds its
// parameters to views of it. A failure panics with the error (the
// operation that needed the parameter fails).
func (d *DDP) gather(k int) {
	if d.full[k] != nil {
		return
	}
	if d.work == nil {
		panic(&autograd.Error{Op: "ddp", Msg: fmt.Sprintf("gathering parameter bucket %d: the DDP was released", k)})
	}
	if d.cur >= 0 {
		d.drop(d.cur)
	}
	b := d.lay.buckets[k]
	full := autograd.New(d.dev, d.dt, device.Communication, b.size)
	full.Block().Relabel(fmt.Sprintf("gather_bucket%d", k), "ddp")
	if err := d.call(func() error { return d.comm.AllGather(full, d.srcs[k]) }); err != nil {
		full.Release()
		panic(&autograd.Error{Op: "ddp", Msg: fmt.Sprintf("gathering parameter bucket %d: %v", k, err)})
	}
	d.full[k], d.cur = full, k
	for _, i := range b.params {
		v := view(full, d.lay.params[i].off, d.params[i].Shape())
		d.params[i].Bind(v)
		v.Release()
	}
}

// drop frees bucket k's gathered parameters: the parameters are unbound
// and the buffer released (what still holds a view of it keeps it alive).
func (d *DDP) drop(k int) {
	if d.full[k] == nil {
		return
	}
	for _, i := range d.lay.buckets[k].params {
		d.params[i].Unbind()
	}
	d.full[k].Release()
	d.full[k] = nil
	if d.cur == k {
		d.cur = -1
	}
}

// dropGathered frees every gathered bucket.
func (d *DDP) dropGathered() {
	for k := range d.full {
		d.drop(k)
	}
}

// savedHooks returns the saved-tensor hooks of parameter i: a parameter
// bound to its gathered bucket is saved as a reference (counted in the
// bucket's refs); one bound elsewhere (Unshard) is kept like any saved
// tensor.
func (d *DDP) savedHooks(i int) *autograd.SavedHooks {
	k := d.lay.params[i].bucket
	return &autograd.SavedHooks{
		Pack: func(t *autograd.Tensor) any {
			if d.full[k] == nil || t.Block() != d.full[k].Block() {
				return t
			}
			t.Release()
			d.refs[k]++
			return ref(i)
		},
		Unpack: func(p any) *autograd.Tensor {
			if t, ok := p.(*autograd.Tensor); ok {
				return t.Detach()
			}
			if d.params[i].Unbound() {
				d.gather(k)
			}
			return d.params[i].Detach()
		},
		Free: func(p any) {
			if t, ok := p.(*autograd.Tensor); ok {
				t.Release()
				return
			}
			if d.refs[k]--; d.refs[k] == 0 {
				d.drop(k)
			}
		},
	}
}

// unshard3 is Unshard under stage 3.
func (d *DDP) unshard3() error {
	if d.whole != nil {
		return nil
	}
	d.dropGathered()
	err := autograd.Try(func() {
		d.whole = autograd.New(d.dev, d.dt, device.Communication, d.lay.total)
		d.whole.Block().Relabel("unshard", "ddp")
	})
	if err != nil {
		return fmt.Errorf("parallel: unshard: %w", err)
	}
	for k, b := range d.lay.buckets {
		region := view(d.whole, b.start, []int{b.size})
		err := d.call(func() error { return d.comm.AllGather(region, d.srcs[k]) })
		region.Release()
		if err != nil {
			d.whole.Release()
			d.whole = nil
			return fmt.Errorf("parallel: unshard: gathering bucket %d: %w", k, err)
		}
	}
	for i, p := range d.params {
		ps := d.lay.params[i]
		v := view(d.whole, d.lay.buckets[ps.bucket].start+ps.off, p.Shape())
		p.Bind(v)
		v.Release()
	}
	return nil
}

// reshard3 is Reshard under stage 3.
func (d *DDP) reshard3() {
	if d.whole == nil {
		return
	}
	for _, p := range d.params {
		p.Unbind()
	}
	d.whole.Release()
	d.whole = nil
}

// Unshard gathers every parameter under stage 3: the parameters are bound
// to one buffer of Ψ′ elements (tagged communication) holding the whole
// model, for evaluation or saving on any rank, until Reshard or the next
// optimizer step. Every rank calls it (it is a collective). Under stages
// 0–2 the parameters are always whole and it does nothing. Release keeps
// an unsharded model's parameters (until the model is released).
func (d *DDP) Unshard() error {
	if d.cfg.Zero < 3 {
		return nil
	}
	if d.work == nil {
		return fmt.Errorf("parallel: unshard: the DDP was released")
	}
	return d.unshard3()
}

// Reshard frees what Unshard gathered: the parameters are sharded again
// and gathered by layer when used.
func (d *DDP) Reshard() {
	if d.cfg.Zero == 3 {
		d.reshard3()
	}
}

// call runs a collective on the communication goroutine, after the
// reductions handed over before it, and returns its error.
func (d *DDP) call(f func() error) error {
	reply := make(chan error, 1)
	d.work <- job{call: f, reply: reply}
	return <-reply
}
