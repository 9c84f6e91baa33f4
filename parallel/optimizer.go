package parallel

import (
	"fmt"
	"strings"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// Optimizer is an optimizer of package optim run the way a DDP's stage
// says: over every parameter (stage 0), or over this rank's shard only
// (stages 1–3: its piece of each bucket), with the updated pieces
// all-gathered into every rank's flat parameter buffer after the step
// (stages 1 and 2; under stage 3 the next forward gathers them); with
// offload the state lives, and the update runs, on the host device.
//
// It is an optim.Sharded optimizer: under stages 1–3, Params are the
// rank's pieces ("bucket<k>.rank<r>", views of the flat buffer — of the
// parameter shard under stage 3 — whose gradients are views of the bucket
// or shard gradient buffer), and AllSum adds up over the ranks, so that
// amp.Scaler skips an overflowed step on every rank and
// optim.ClipGradNormOf clips by the global norm. Under stage 0 Params are
// the model's and State is exactly a single-rank optimizer's; under stages
// 1–3 State holds this rank's shard ("exp_avg.bucket0.rank1", and with
// offload "master.bucket0.rank1").
type Optimizer struct {
	d       *DDP
	inner   optim.Optimizer
	pieces  []*autograd.Tensor // stages 1–3: this rank's piece of each bucket
	regions []*autograd.Tensor // stages 1, 2: each bucket's extent of the flat buffer
	host    []*autograd.Tensor // offload: F32 master pieces on the host (the inner optimizer's parameters)
}

var _ optim.Sharded = (*Optimizer)(nil)

// NewAdam returns Adam (optim.NewAdam) for d. With 16-bit parameters set
// c.MasterWeights (the F32 masters are kept in the optimizer state,
// sharded under stages 1–3); with offload the host's F32 copy is the
// master and c.MasterWeights is not needed.
func NewAdam(d *DDP, c optim.AdamConfig) (*Optimizer, error) {
	return d.optimizer(func(ps []nn.Param, offloaded bool) (optim.Optimizer, error) {
		if offloaded {
			c.MasterWeights = false
		}
		return optim.NewAdam(ps, c)
	})
}

// NewAdamW returns AdamW (optim.NewAdamW) for d; see NewAdam.
func NewAdamW(d *DDP, c optim.AdamConfig) (*Optimizer, error) {
	return d.optimizer(func(ps []nn.Param, offloaded bool) (optim.Optimizer, error) {
		if offloaded {
			c.MasterWeights = false
		}
		return optim.NewAdamW(ps, c)
	})
}

// NewSGD returns SGD (optim.NewSGD) for d; see NewAdam.
func NewSGD(d *DDP, c optim.SGDConfig) (*Optimizer, error) {
	return d.optimizer(func(ps []nn.Param, offloaded bool) (optim.Optimizer, error) {
		if offloaded {
			c.MasterWeights = false
		}
		return optim.NewSGD(ps, c)
	})
}

func (d *DDP) optimizer(mk func([]nn.Param, bool) (optim.Optimizer, error)) (*Optimizer, error) {
	if d.work == nil {
		return nil, fmt.Errorf("parallel: optimizer: the DDP was released")
	}
	o := &Optimizer{d: d}
	if d.cfg.Zero == 0 {
		ps := make([]nn.Param, len(d.params))
		for i, p := range d.params {
			ps[i] = nn.Param{Name: d.names[i], T: p}
		}
		inner, err := mk(ps, false)
		if err != nil {
			return nil, err
		}
		o.inner = inner
		return o, nil
	}
	r := d.comm.Rank()
	for k, b := range d.lay.buckets {
		var pc *autograd.Tensor
		if d.cfg.Zero < 3 {
			pc = view(d.flat, b.start+r*b.piece, []int{b.piece})
			o.regions = append(o.regions, view(d.flat, b.start, []int{b.size}))
		} else {
			pc = view(d.shard, b.shardOff, []int{b.piece})
		}
		pc.SetName(fmt.Sprintf("bucket%d.rank%d", k, r))
		pc.SetGradDType(d.gdt)
		pc.SetGrad(d.pieceGrad(k))
		o.pieces = append(o.pieces, pc)
	}
	ps := o.Params()
	if d.cfg.Host != nil {
		hdt := dtype.F32 // the masters of F16, BF16 and F32 parameters; F64 stays F64
		if d.dt == dtype.F64 {
			hdt = dtype.F64
		}
		err := autograd.Try(func() {
			for _, pc := range o.pieces {
				h := autograd.New(d.cfg.Host, hdt, device.Optimizer, pc.Len())
				o.host = append(o.host, h)
				h.Block().Relabel("master", pc.Name())
				h.SetName(pc.Name())
				h.CopyFrom(pc)
				g := autograd.New(d.cfg.Host, hdt, device.Gradient, pc.Len())
				g.Block().Relabel("grad", pc.Name())
				h.SetGrad(g)
			}
		})
		if err != nil {
			o.release()
			return nil, fmt.Errorf("parallel: optimizer: offload to %s: %w", d.cfg.Host, err)
		}
		for i, h := range o.host {
			ps[i].T = h
		}
	}
	inner, err := mk(ps, d.cfg.Host != nil)
	if err != nil {
		o.release()
		return nil, err
	}
	o.inner = inner
	return o, nil
}

// pieceGrad returns this rank's piece of bucket k's gradient (stages 1–3):
// a view of the bucket's gradient buffer (stage 1) or of the shard's.
func (d *DDP) pieceGrad(k int) *autograd.Tensor {
	b := d.lay.buckets[k]
	if d.cfg.Zero == 1 {
		return view(d.grads[k], d.comm.Rank()*b.piece, []int{b.piece})
	}
	return view(d.shardGrad, b.shardOff, []int{b.piece})
}

// Step waits for the gradients' reduction and updates the parameters:
// all of them (stage 0), or this rank's pieces followed by an all-gather
// of every bucket (stages 1, 2; with offload the pieces' gradients go to
// the host, the host updates its F32 masters and the pieces get them
// back). Under stage 3 only the pieces change; what was gathered (Unshard
// included) is freed first, since it would be out of date. Buffers are
// then broadcast from rank 0. When the update fails on this rank (state it
// cannot allocate, say) it aborts the group, since the ranks' parameters
// could no longer agree, and returns the error.
func (o *Optimizer) Step() error {
	d := o.d
	if err := d.settle(); err != nil {
		return err
	}
	if o.host != nil {
		err := autograd.Try(func() {
			for i, h := range o.host {
				h.Grad().CopyFrom(o.pieces[i].Grad())
			}
		})
		if err != nil {
			d.comm.Abort(err)
			return fmt.Errorf("parallel: step: gradients to %s: %w", d.cfg.Host, err)
		}
	}
	if err := o.inner.Step(); err != nil {
		d.comm.Abort(err)
		return fmt.Errorf("parallel: step on rank %d: %w", d.comm.Rank(), err)
	}
	if o.host != nil {
		for i, h := range o.host {
			o.pieces[i].CopyFrom(h)
		}
	}
	if err := o.gatherRegions(); err != nil {
		return fmt.Errorf("parallel: step: %w", err)
	}
	return d.syncBuffers()
}

// ZeroGrad frees the model's gradients (DDP.ZeroGrad); the pieces keep
// their views of the gradient buffers.
func (o *Optimizer) ZeroGrad() { o.d.ZeroGrad() }

// LR returns the learning rate of the next Step.
func (o *Optimizer) LR() float64 { return o.inner.LR() }

// SetLR sets the learning rate.
func (o *Optimizer) SetLR(lr float64) { o.inner.SetLR(lr) }

// Params returns what this rank updates: the model's parameters (stage 0)
// or its pieces of the flat buffer (stages 1–3), with their gradients.
func (o *Optimizer) Params() []nn.Param {
	o.d.drain() // a pass left incomplete must not be read while in flight
	if o.pieces == nil {
		return o.inner.Params()
	}
	ps := make([]nn.Param, len(o.pieces))
	for i, pc := range o.pieces {
		ps[i] = nn.Param{Name: pc.Name(), T: pc}
	}
	return ps
}

// AllSum returns the sum of v over the ranks under stages 1–3, and v
// under stage 0 (whose Params hold every gradient).
func (o *Optimizer) AllSum(v float64) (float64, error) {
	if o.pieces == nil {
		return v, nil
	}
	return o.d.allSum(v)
}

// State returns the inner optimizer's state, with the host's F32 masters
// ("master.<piece>") under offload.
func (o *Optimizer) State() optim.State {
	s := o.inner.State()
	for _, h := range o.host {
		s.Tensors["master."+h.Name()] = h
	}
	return s
}

// Load restores a State saved by an Optimizer of the same configuration
// on the same rank of a group of the same size; on error nothing changed.
func (o *Optimizer) Load(s optim.State) error {
	in := optim.State{Tensors: map[string]*autograd.Tensor{}, Scalars: s.Scalars}
	masters := map[*autograd.Tensor]*autograd.Tensor{}
	for name, t := range s.Tensors {
		if n, ok := strings.CutPrefix(name, "master."); ok && o.host != nil {
			var h *autograd.Tensor
			for _, x := range o.host {
				if x.Name() == n {
					h = x
				}
			}
			if h == nil || t == nil || t.Released() || t.Len() != h.Len() {
				return fmt.Errorf("parallel: load: master %q does not fit this rank's shard", n)
			}
			masters[h] = t
			continue
		}
		in.Tensors[name] = t
	}
	if o.host != nil && len(masters) != len(o.host) && len(masters) != 0 {
		return fmt.Errorf("parallel: load: %d of %d master pieces", len(masters), len(o.host))
	}
	if err := o.inner.Load(in); err != nil {
		return err
	}
	for h, t := range masters {
		h.CopyFrom(t)
	}
	return nil
}

// Release frees the optimizer state, the pieces' handles and the host
// tensors.
func (o *Optimizer) Release() {
	if o.inner != nil {
		o.inner.Release()
	}
	o.release()
}

func (o *Optimizer) release() {
	for _, ts := range [][]*autograd.Tensor{o.pieces, o.regions, o.host} {
		for _, t := range ts {
			t.Release()
		}
	}
	o.pieces, o.regions, o.host = nil, nil, nil
}
