package parallel

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
)

// pass is the state of one backward pass, kept by the training goroutine:
// which parameters and buckets are ready, which buckets were handed to the
// communication goroutine (always in bucket order, the same on every
// rank) and which of those have come back.
type pass struct {
	pending   []int  // per bucket: parameters not ready yet
	ready     []bool // per bucket
	pready    []bool // per parameter
	nready    int    // parameters ready
	launched  int    // buckets handed over: 0 … launched−1
	completed int    // of those, finished
	jobs      []job  // by bucket, while launched
	live      []*autograd.Tensor
	fresh     []bool // stage 2: the shard piece has not been written since ZeroGrad
	noSync    bool
	err       error     // the first communication error; sticky
	reduced   func(int) // when set, called with each bucket whose reduction completed, then −1 at the pass's end (InBackward)
}

// job is one bucket's reduction, run by the communication goroutine.
type job struct {
	k          int
	src, dst   *autograd.Tensor // stage 2: views of the bucket buffer
	piece      *autograd.Tensor // stage 2: this rank's piece of the shard gradient
	fresh      bool
	stage2View bool
	call       func() error // stage 3: a collective of the training goroutine
	reply      chan error   // where call's error goes
}

func (d *DDP) newPass() {
	nb := len(d.lay.buckets)
	d.pending, d.ready = make([]int, nb), make([]bool, nb)
	d.pready = make([]bool, len(d.params))
	d.jobs, d.live, d.fresh = make([]job, nb), make([]*autograd.Tensor, nb), make([]bool, nb)
	for k := range d.fresh {
		d.fresh[k] = true
	}
	d.resetPass()
}

// resetPass starts the bookkeeping of the next backward pass.
func (d *DDP) resetPass() {
	for k, b := range d.lay.buckets {
		d.pending[k], d.ready[k] = len(b.params), false
	}
	clear(d.pready)
	d.nready, d.launched, d.completed = 0, 0, 0
}

// syncing reports whether this pass reduces gradients.
func (d *DDP) syncing() bool { return !d.noSync || d.cfg.Zero >= 2 }

// fail stops backward with the communication error.
func (d *DDP) fail() {
	if d.err != nil {
		panic(&autograd.Error{Op: "ddp", Msg: d.err.Error()})
	}
}

// gradFor gives a parameter its gradient at its first contribution: a
// zeroed view of its bucket's gradient buffer (stages 0, 1), or of its
// bucket's communication buffer, allocated now (stages 2, 3).
func (d *DDP) gradFor(leaf *autograd.Tensor) *autograd.Tensor {
	d.fail()
	ps := d.lay.params[d.index[leaf]]
	b := d.lay.buckets[ps.bucket]
	if d.cfg.Zero < 2 {
		v := view(d.grads[ps.bucket], ps.off, leaf.Shape())
		v.Fill(0)
		return v
	}
	if d.live[ps.bucket] == nil {
		t := autograd.New(d.dev, d.gdt, device.Communication, b.size+b.piece)
		t.Block().Relabel(fmt.Sprintf("bucket%d", ps.bucket), "ddp")
		d.live[ps.bucket] = t
	}
	return view(d.live[ps.bucket], ps.off, leaf.Shape())
}

// onReady runs when backward has added a parameter's last contribution:
// when that completes buckets, they are handed to the communication
// goroutine in bucket order; when it completes the pass, every reduction
// is waited for.
func (d *DDP) onReady(leaf *autograd.Tensor) {
	i := d.index[leaf]
	if d.pready[i] { // a new pass began before the last one completed
		d.incomplete()
		d.fail()
	}
	if leaf.Grad() == nil { // reached, but no gradient flowed: zero
		leaf.SetGrad(d.gradFor(leaf))
	}
	d.pready[i] = true
	d.nready++
	k := d.lay.params[i].bucket
	if d.pending[k]--; d.pending[k] == 0 {
		d.ready[k] = true
	}
	if d.syncing() {
		for d.launched < len(d.ready) && d.ready[d.launched] {
			d.launch()
		}
	}
	if d.nready == len(d.params) {
		d.endPass()
		d.fail()
	}
}

// launch hands the next bucket to the communication goroutine. Under
// stages 2 and 3 it first waits for the bucket handed over before and
// frees its buffer: the buffers alive are then the one in flight and those
// backward is filling, at every moment, on every rank and every run alike.
func (d *DDP) launch() {
	k := d.launched
	j := job{k: k}
	if d.cfg.Zero < 2 {
		j.src = d.grads[k]
	} else {
		d.retire(k)
		d.fail()
		b := d.lay.buckets[k]
		j.src = view(d.live[k], 0, []int{b.size})
		j.dst = view(d.live[k], b.size, []int{b.piece})
		j.piece = view(d.shardGrad, b.shardOff, []int{b.piece})
		j.fresh, j.stage2View = d.fresh[k], true
		d.fresh[k] = false
	}
	d.jobs[k] = j
	d.launched++
	d.work <- j
}

// serve is the communication goroutine: it reduces buckets in the order
// they come, while the training goroutine goes on with backward.
func (d *DDP) serve() {
	defer close(d.exited)
	for j := range d.work {
		if j.call != nil {
			j.reply <- j.call()
			continue
		}
		d.done <- d.reduce(j)
	}
}

// reduce averages one bucket over the ranks: an all-reduce of its gradient
// buffer (stages 0, 1), or a reduce-scatter whose result — this rank's
// piece — is copied (first time since ZeroGrad) or added into the shard.
func (d *DDP) reduce(j job) error {
	if d.cfg.Zero < 2 {
		return d.comm.AllReduce(j.src, Avg)
	}
	if err := d.comm.ReduceScatter(j.dst, j.src, Avg); err != nil {
		return err
	}
	return autograd.Try(func() {
		if j.fresh {
			j.piece.CopyFrom(j.dst)
		} else {
			j.piece.AddInPlace(j.dst, 1)
		}
	})
}

// waitFor waits until bucket k's reduction (and every earlier one) is
// done, keeping the first error.
func (d *DDP) waitFor(k int) {
	for d.completed <= k {
		err := <-d.done
		if err != nil && d.err == nil {
			d.err = fmt.Errorf("reducing gradient bucket %d: %w", d.completed, err)
		}
		if j := d.jobs[d.completed]; j.stage2View {
			j.src.Release()
			j.dst.Release()
			j.piece.Release()
		}
		d.jobs[d.completed] = job{}
		d.completed++
		if err == nil && d.err == nil && d.reduced != nil {
			d.reduced(d.completed - 1)
		}
	}
}

// retire waits for the buckets handed over before bucket upto and frees
// their stage-2 buffers, with the parameters' gradient views into them.
func (d *DDP) retire(upto int) {
	for k := 0; k < upto; k++ {
		if d.live[k] == nil {
			continue
		}
		d.waitFor(k)
		for _, i := range d.lay.buckets[k].params {
			d.params[i].ZeroGrad()
		}
		d.live[k].Release()
		d.live[k] = nil
	}
}

// endPass finishes a pass in which every parameter is ready (under stage
// 3 no gathered bucket is left).
func (d *DDP) endPass() {
	if d.syncing() {
		d.waitFor(d.launched - 1)
		d.retire(d.launched)
	}
	if d.full != nil {
		d.dropGathered()
	}
	d.resetPass()
	if d.reduced != nil && d.err == nil {
		d.reduced(-1) // the pass is complete
	}
}

// finish checks that no pass was left incomplete — a parameter that got
// no gradient while the others did — and returns the communication error,
// if any.
func (d *DDP) finish() error {
	if d.nready > 0 {
		d.incomplete()
	}
	if d.err != nil {
		return fmt.Errorf("parallel: ddp: %w", d.err)
	}
	return nil
}

// incomplete records the error of a pass in which some parameters got no
// gradient, naming the first, after waiting for the reductions in flight.
func (d *DDP) incomplete() {
	d.waitFor(d.launched - 1)
	if d.err != nil {
		return
	}
	for i, ok := range d.pready {
		if !ok {
			d.err = fmt.Errorf("parameter %q got no gradient in a backward pass in which %d others did: every trainable parameter must take part in every backward (leave parameters that do not out of the model's trainable ones)",
				d.names[i], d.nready)
			return
		}
	}
}

// drain waits for the reductions in flight.
func (d *DDP) drain() { d.waitFor(d.launched - 1) }

// reset abandons the pass in progress after an error: it waits for the
// reductions handed over (they end, with an error if the group was
// aborted) and frees the stage-2 buffers and the gathered buckets.
func (d *DDP) reset() {
	d.waitFor(d.launched - 1)
	if d.full != nil {
		d.dropGathered()
	}
	for k, t := range d.live {
		if t != nil {
			for _, i := range d.lay.buckets[k].params {
				d.params[i].ZeroGrad()
			}
			t.Release()
			d.live[k] = nil
		}
	}
	d.resetPass()
}

// ZeroGrad frees the parameters' gradients (their views into the buffers)
// and starts the next step: under stage 2 the next reduction of each
// bucket overwrites the shard instead of adding to it.
func (d *DDP) ZeroGrad() {
	d.reset()
	for _, p := range d.params {
		p.ZeroGrad()
	}
	for k := range d.fresh {
		d.fresh[k] = true
	}
}
