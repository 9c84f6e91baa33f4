package parallel

import (
	"fmt"
	"math"
	"strings"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// DDPConfig configures data parallelism; the zero value is plain data
// parallelism (ZeRO stage 0) with the default buckets.
type DDPConfig struct {
	// Zero is the ZeRO stage: 0 (default) keeps every model state on every
	// rank; 1 shards the optimizer state (and F32 master weights); 2 also
	// shards the gradients; 3 also shards the parameters, which are
	// gathered bucket by bucket when the layers use them.
	Zero int
	// BucketBytes caps the parameter bytes of a gradient bucket: whole
	// layers, taken from the last one backwards; a layer larger than the
	// cap gets a bucket of its own. Default (0): a sixteenth of the
	// parameters' bytes, at least 64 KiB and at most 25 MiB (PyTorch's
	// default), so that a model of any size gets about 16 buckets to
	// overlap with backward, and stage 2 holds about 2/16 of the gradients
	// in flight. Under stage 3 a bucket is also the unit of gathering
	// parameters: about 1/16 of them are whole at a time.
	BucketBytes int64
	// Host, when set, holds the optimizer state, an F32 master copy of this
	// rank's shard and a copy of its gradients, and runs the optimizer
	// step there (ZeRO-Offload): the compute device keeps only parameters
	// and gradients. It needs Zero ≥ 1.
	Host *device.Device
	// Builder, when set, is the nn.NewDeferredBuilder that made the model:
	// NewDDP writes the parameters that have no storage yet directly from
	// the builder's Init records instead of broadcasting rank 0's — under
	// stage 3 only this rank's pieces, so that no rank ever holds the
	// whole model (when every parameter is deferred; otherwise rank 0's
	// are broadcast as without it, each deferred one materialising whole
	// first). Every rank builds with the same seed: the values are those
	// of an unsharded build, bit for bit.
	Builder *nn.Builder
}

// DDP is one rank of data-parallel training of a model: see the package
// documentation for what each stage keeps where, and the exact bytes.
// Its methods are called by the goroutine that trains the rank.
type DDP struct {
	comm     Communicator
	cfg      DDPConfig
	dev      *device.Device
	dt       dtype.DType // the parameters'
	gdt      dtype.DType // their gradients' (autograd's GradDType: F32 main grads of 16-bit parameters)
	names    []string
	params   []*autograd.Tensor // trainable, in the model's order
	buffers  []*autograd.Tensor // not trained: broadcast from rank 0
	bufNames []string
	index    map[*autograd.Tensor]int
	lay      layout

	flat      *autograd.Tensor   // stages 0–2: Ψ′ elements, tagged parameter
	grads     []*autograd.Tensor // stages 0, 1: one buffer per bucket, tagged gradient
	shardGrad *autograd.Tensor   // stages 2, 3: this rank's shard of the gradients
	scalar    *autograd.Tensor   // stages 1–3: every rank's F64 for AllSum (as 2·N F32 words), tagged communication
	removes   []func()

	// stage 3 (stage3.go)
	shard *autograd.Tensor   // this rank's pieces of the parameters, tagged parameter
	srcs  []*autograd.Tensor // per bucket: this rank's piece, a view of shard
	full  []*autograd.Tensor // per bucket: its gathered parameters while they are, tagged communication
	refs  []int              // per bucket: parameters saved for backward by reference, not freed yet
	cur   int                // the gathered bucket, or −1
	whole *autograd.Tensor   // Unshard's buffer of every parameter

	pass

	work   chan job
	done   chan error
	exited chan struct{}
}

// NewDDP makes rank comm.Rank() of data-parallel training of m (its
// trainable parameters: one float dtype, one device). It moves the
// parameters into one flat buffer, allocates the gradient buffers of the
// stage, broadcasts rank 0's parameters and buffers to every rank, and
// installs the hooks that reduce gradients while backward runs. Every rank
// calls it with the same model structure; on error nothing is allocated
// (a failed broadcast leaves the parameters in the flat buffer). Under
// stage 3 the rank keeps its shard of rank 0's parameters instead, and the
// model's parameters lose their storage: they are gathered when used. Train
// the model with an optimizer from NewAdam, NewAdamW or NewSGD, and call
// Release when done (before releasing the model).
func NewDDP(comm Communicator, m nn.Module, c DDPConfig) (*DDP, error) {
	if c.Zero < 0 || c.Zero > 3 {
		return nil, fmt.Errorf("parallel: ddp: ZeRO stage %d: want 0, 1, 2 or 3", c.Zero)
	}
	if c.BucketBytes < 0 {
		return nil, fmt.Errorf("parallel: ddp: BucketBytes %d, want ≥ 0 (0: the default)", c.BucketBytes)
	}
	d := &DDP{comm: comm, cfg: c, index: map[*autograd.Tensor]int{}}
	var sizes []int
	for _, p := range m.Params() {
		if p.Buffer {
			d.buffers, d.bufNames = append(d.buffers, p.T), append(d.bufNames, p.Name)
			continue
		}
		switch {
		case p.T == nil || p.T.Released() && !p.T.Unbound():
			return nil, fmt.Errorf("parallel: ddp: parameter %q is nil or released", p.Name)
		case !p.T.IsLeaf() || p.T.Scope() != nil:
			return nil, fmt.Errorf("parallel: ddp: parameter %q is not a free-standing leaf", p.Name)
		case !p.T.DType().IsFloat():
			return nil, fmt.Errorf("parallel: ddp: parameter %q has dtype %s, want a float dtype", p.Name, p.T.DType())
		case d.dev == nil:
			d.dev, d.dt, d.gdt = p.T.Device(), p.T.DType(), p.T.GradDType()
		case p.T.Device() != d.dev || p.T.DType() != d.dt || p.T.GradDType() != d.gdt:
			return nil, fmt.Errorf("parallel: ddp: parameter %q is %s (gradients %s) on %s, %q %s (gradients %s) on %s: want one dtype, gradient dtype and device",
				p.Name, p.T.DType(), p.T.GradDType(), p.T.Device(), d.names[0], d.dt, d.gdt, d.dev)
		}
		d.index[p.T] = len(d.params)
		d.params = append(d.params, p.T)
		d.names = append(d.names, p.Name)
		sizes = append(sizes, p.T.Len())
	}
	switch {
	case len(d.params) == 0:
		return nil, fmt.Errorf("parallel: ddp: the model has no trainable parameters")
	case c.Host != nil && c.Zero == 0:
		return nil, fmt.Errorf("parallel: ddp: offload to %s needs ZeRO stage 1, 2 or 3", c.Host)
	case c.Host == d.dev:
		return nil, fmt.Errorf("parallel: ddp: offload host %s is the compute device", c.Host)
	}
	if c.BucketBytes == 0 {
		var total int64
		for _, n := range sizes {
			total += int64(n) * int64(d.gdt.Size())
		}
		c.BucketBytes = min(max(total/16, 64<<10), 25<<20)
		d.cfg.BucketBytes = c.BucketBytes
	}
	layers := make([]string, len(d.names))
	for i, n := range d.names {
		if j := strings.LastIndexByte(n, '.'); j >= 0 {
			layers[i] = n[:j]
		} else {
			layers[i] = n
		}
	}
	d.lay = newLayout(sizes, layers, int(c.BucketBytes/int64(d.gdt.Size())), comm.Size(), c.Zero >= 1)
	if err := d.allocate(); err != nil {
		d.free()
		return nil, fmt.Errorf("parallel: ddp: %w", err)
	}
	switch {
	case c.Zero == 3 && d.allDeferred():
		if err := autograd.Try(d.initShard); err != nil {
			d.free()
			return nil, fmt.Errorf("parallel: ddp: initialising this rank's shard: %w", err)
		}
		d.unbind()
	case c.Zero == 3:
		if err := d.shardParams(); err != nil {
			d.free()
			return nil, fmt.Errorf("parallel: ddp: sharding rank 0's parameters: %w", err)
		}
	default:
		if err := autograd.Try(d.intoFlat); err != nil {
			d.free()
			return nil, fmt.Errorf("parallel: ddp: moving the parameters into the flat buffer: %w", err)
		}
		if err := comm.Broadcast(d.flat, 0); err != nil {
			d.free()
			return nil, fmt.Errorf("parallel: ddp: broadcasting rank 0's parameters: %w", err)
		}
	}
	for _, t := range d.buffers {
		if err := comm.Broadcast(t, 0); err != nil {
			d.free()
			return nil, fmt.Errorf("parallel: ddp: broadcasting rank 0's buffers: %w", err)
		}
	}
	for _, p := range d.params {
		d.removes = append(d.removes, p.OnGradReady(d.onReady))
		p.SetGradAlloc(d.gradFor)
	}
	d.newPass()
	d.work, d.done, d.exited = make(chan job, len(d.lay.buckets)+1), make(chan error, len(d.lay.buckets)), make(chan struct{})
	go d.serve()
	return d, nil
}

// intoFlat gives every parameter its place in the flat buffer: a deferred
// one is written there from its record, any other moved there.
func (d *DDP) intoFlat() {
	for i, p := range d.params {
		p.ZeroGrad()
		ps := d.lay.params[i]
		v := view(d.flat, d.lay.buckets[ps.bucket].start+ps.off, p.Shape())
		if in, ok := d.deferred(i); ok {
			in.Write(v, 0)
			p.Bind(v)
			p.SetFetch(nil)
		} else {
			p.MoveInto(v)
		}
		v.Release()
	}
}

// deferred returns parameter i's record when it has no storage yet and
// the configuration's Builder made it.
func (d *DDP) deferred(i int) (nn.Init, bool) {
	if d.cfg.Builder == nil || !d.params[i].Unbound() {
		return nn.Init{}, false
	}
	return d.cfg.Builder.Init(d.params[i])
}

// allDeferred reports whether every parameter is deferred.
func (d *DDP) allDeferred() bool {
	for i := range d.params {
		if _, ok := d.deferred(i); !ok {
			return false
		}
	}
	return true
}

// allocate makes the flat parameter buffer (stage 3: this rank's shard)
// and the gradient buffers.
func (d *DDP) allocate() error {
	return autograd.Try(func() {
		if d.cfg.Zero < 3 {
			d.flat = autograd.New(d.dev, d.dt, device.Parameter, d.lay.total)
			d.flat.Block().Relabel("flat", "ddp")
		} else {
			d.shard = autograd.New(d.dev, d.dt, device.Parameter, d.lay.shard)
			d.shard.Block().Relabel("param_shard", "ddp")
			for _, b := range d.lay.buckets {
				d.srcs = append(d.srcs, view(d.shard, b.shardOff, []int{b.piece}))
			}
		}
		switch d.cfg.Zero {
		case 0, 1:
			for k, b := range d.lay.buckets {
				g := autograd.New(d.dev, d.gdt, device.Gradient, b.size)
				g.Block().Relabel(fmt.Sprintf("grad_bucket%d", k), "ddp")
				d.grads = append(d.grads, g)
			}
		case 2, 3:
			d.shardGrad = autograd.New(d.dev, d.gdt, device.Gradient, d.lay.shard)
			d.shardGrad.Block().Relabel("grad_shard", "ddp")
		}
		if d.cfg.Zero >= 1 {
			d.scalar = autograd.New(d.dev, dtype.F32, device.Communication, 2*d.comm.Size())
			d.scalar.Block().Relabel("all_sum", "ddp")
		}
	})
}

// free releases what allocate made.
func (d *DDP) free() {
	ts := append([]*autograd.Tensor{d.flat, d.shardGrad, d.scalar, d.shard}, d.grads...)
	for _, t := range append(ts, d.srcs...) {
		if t != nil {
			t.Release()
		}
	}
	d.flat, d.shardGrad, d.scalar, d.grads, d.shard, d.srcs = nil, nil, nil, nil, nil, nil
}

// Release waits for the communication in flight, removes the hooks and
// frees the gradient and communication buffers. The parameters keep the
// flat buffer (they are views of it) until the model is released. Under
// stage 3 the parameters are left without storage — using them fails —
// unless Unshard gathered them: then they keep the gathered buffer.
func (d *DDP) Release() {
	if d.work == nil {
		return
	}
	d.reset()
	close(d.work)
	<-d.exited
	d.work = nil
	for _, r := range d.removes {
		r()
	}
	for _, p := range d.params {
		p.SetGradAlloc(nil)
		p.ZeroGrad()
		if d.cfg.Zero == 3 {
			p.SetFetch(nil)
			p.SetSavedHooks(nil)
		}
	}
	if d.whole != nil { // the parameters hold it
		d.whole.Release()
		d.whole = nil
	}
	d.free()
}

// Comm returns the rank's communicator.
func (d *DDP) Comm() Communicator { return d.comm }

// Zero returns the ZeRO stage.
func (d *DDP) Zero() int { return d.cfg.Zero }

// Buckets returns the parameter elements of each gradient bucket, in the
// order backward fills them: bucket 0 holds the last parameters.
func (d *DDP) Buckets() []int {
	out := make([]int, len(d.lay.buckets))
	for k, b := range d.lay.buckets {
		out[k] = b.used
	}
	return out
}

// FlatLen returns Ψ′, the elements of the flat parameter buffer: the
// parameters' Ψ plus the padding of sharded buckets.
func (d *DDP) FlatLen() int { return d.lay.total }

// ShardLen returns the elements of this rank's shard (stages 1–3):
// Σ_k ⌈u_k/N⌉ over the buckets' parameter elements u_k.
func (d *DDP) ShardLen() int { return d.lay.shard }

// NoSync runs f — the forward and backward of a micro-batch that is not
// the last of a step — without reducing gradients: they accumulate in the
// gradient buffers, and the next backward outside NoSync reduces the sum.
// Under stages 2 and 3 it changes nothing: each micro-batch's gradients are
// reduce-scattered into the shard as usual (keeping them whole until the
// last micro-batch would undo the stage's saving); the result is the same.
func (d *DDP) NoSync(f func()) {
	old := d.noSync
	d.noSync = true
	defer func() { d.noSync = old }()
	f()
}

// syncBuffers broadcasts rank 0's buffers (batch-norm statistics).
func (d *DDP) syncBuffers() error {
	for _, b := range d.buffers {
		if err := d.comm.Broadcast(b, 0); err != nil {
			return fmt.Errorf("parallel: ddp: broadcasting buffers: %w", err)
		}
	}
	return nil
}

// allSum returns the sum of v over the ranks. The ranks' values are
// all-gathered bit for bit (an F64 as two F32 words, so that a
// communicator needs no F64 support) and every rank adds them in rank
// order in float64: the same sum, to the bit, on every rank.
func (d *DDP) allSum(v float64) (float64, error) {
	if err := d.finish(); err != nil {
		return 0, err
	}
	n, r := d.comm.Size(), d.comm.Rank()
	bits := math.Float64bits(v)
	mine := view(d.scalar, 2*r, []int{2})
	mine.SetFloat32s([]float32{math.Float32frombits(uint32(bits)), math.Float32frombits(uint32(bits >> 32))})
	err := d.comm.AllGather(d.scalar, mine)
	mine.Release()
	if err != nil {
		return 0, fmt.Errorf("parallel: summing over the ranks: %w", err)
	}
	words := d.scalar.Float32s()
	var sum float64
	for q := range n {
		sum += math.Float64frombits(uint64(math.Float32bits(words[2*q])) | uint64(math.Float32bits(words[2*q+1]))<<32)
	}
	return sum, nil
}

// view returns a free-standing view of elements [off, off+numel(shape)) of
// the one-dimensional buf, in shape.
func view(buf *autograd.Tensor, off int, shape []int) *autograd.Tensor {
	n := 1
	for _, s := range shape {
		n *= s
	}
	s := buf.Slice(0, off, off+n)
	defer s.Release()
	return s.Reshape(shape...)
}
