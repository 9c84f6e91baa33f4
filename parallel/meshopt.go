package parallel

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/optim"
)

// MeshOptimizer is the optimizer of one rank of a mesh — over its
// stage's tensor-parallel part of the model, or over its data-parallel
// shard of that (an *Optimizer of a DDP over the Data group) — as an
// optim.Sharded whose sums span the whole mesh:
//
//   - AllSum adds a value over every rank (World): an amp.Scaler's
//     found-inf flag is then agreed by every rank, which all skip or all
//     step, and keep one scale;
//   - GradNorm is the whole model's gradient norm, the one-device run's:
//     each rank adds the squares of its own gradients, the parameters a
//     tensor group holds whole (Replicated) counted on tensor rank 0 only,
//     and, when the data-parallel copies hold the same reduced gradients
//     (no DDP, or ZeRO stage 0), data rank 0 only — one F64 all-reduce
//     over World;
//   - Step clips every rank's gradients by that norm (Clip) before the
//     inner optimizer steps, and refuses a non-finite norm on every rank
//     alike, before anything changed.
//
// Every rank of the mesh calls AllSum, GradNorm and Step at the same
// point. Do not pass it to optim.ClipGradNormOf: its local sum counts
// the replicated parameters on every tensor rank; Step clips instead.
type MeshOptimizer struct {
	optim.Optimizer
	// Clip is the global gradient-norm limit of Step (0: none; the norm
	// is computed anyway, to refuse a non-finite one).
	Clip float64

	m     *Mesh
	dev   *device.Device
	ddp   *Optimizer // the DDP's optimizer, when the inner one is
	whole map[*autograd.Tensor]bool
	norm  float64
}

var _ optim.Sharded = (*MeshOptimizer)(nil)

// NewMeshOptimizer returns o, mesh rank m's optimizer, as a
// MeshOptimizer. replicated are the parameters every rank of m.Tensor
// holds whole and trains alike (TensorGPT.Replicated; nil without tensor
// parallelism); those not among o's model parameters are ignored. With
// more than one data-parallel copy o must be an *Optimizer (NewAdam,
// NewAdamW, NewSGD) of a DDP over m.Data.
func NewMeshOptimizer(m *Mesh, o optim.Optimizer, replicated []*autograd.Tensor) (*MeshOptimizer, error) {
	mo := &MeshOptimizer{Optimizer: o, m: m, whole: map[*autograd.Tensor]bool{}}
	for _, t := range replicated {
		mo.whole[t] = true
	}
	mo.ddp, _ = o.(*Optimizer)
	switch {
	case m.Shape.Data > 1 && mo.ddp == nil:
		return nil, fmt.Errorf("parallel: mesh optimizer: %d data-parallel copies with a %T: want the *parallel.Optimizer of a DDP over the Data group", m.Shape.Data, o)
	case mo.ddp != nil:
		mo.dev = mo.ddp.d.dev
	default:
		for _, p := range o.Params() {
			if p.T != nil && !p.T.Released() {
				mo.dev = p.T.Device()
				break
			}
		}
	}
	if mo.dev == nil {
		return nil, fmt.Errorf("parallel: mesh optimizer: rank %d's optimizer has no parameters", m.World.Rank())
	}
	return mo, nil
}

// AllSum returns the sum of v over every rank of the mesh (an F64
// all-reduce over World, 8 bytes of communication).
func (o *MeshOptimizer) AllSum(v float64) (float64, error) {
	return AllSumFloat64(o.m.World, o.dev, v)
}

// Norm returns the gradient norm the last Step computed.
func (o *MeshOptimizer) Norm() float64 { return o.norm }

// GradNorm returns the whole model's gradient norm (see MeshOptimizer):
// √(Σ over the ranks of each one's share of the squares), the same on
// every rank.
func (o *MeshOptimizer) GradNorm() (float64, error) {
	if o.ddp != nil {
		if err := o.ddp.d.finish(); err != nil {
			return 0, err
		}
	}
	own, rep, err := o.sums()
	if err != nil {
		return 0, err
	}
	share := own
	if o.m.TensorRank == 0 {
		share += rep
	}
	if o.m.DataRank != 0 && (o.ddp == nil || o.ddp.pieces == nil) && !math.IsNaN(share) && !math.IsInf(share, 0) {
		share = 0 // the copies' reduced gradients are the same: data rank 0 counts them (a non-finite one is passed on)
	}
	ss, err := o.AllSum(share)
	if err != nil {
		return 0, fmt.Errorf("parallel: gradient norm: %w", err)
	}
	return math.Sqrt(ss), nil
}

// Step computes GradNorm, refuses a non-finite one, scales the gradients
// by Clip/(norm+1e-6) when that is below 1 (optim.ClipGradNorm's factor)
// and steps the inner optimizer.
func (o *MeshOptimizer) Step() error {
	norm, err := o.GradNorm()
	if err != nil {
		return err
	}
	o.norm = norm
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return fmt.Errorf("parallel: mesh step on rank %d: the gradient norm is %v", o.m.World.Rank(), norm)
	}
	if c := o.Clip / (norm + 1e-6); o.Clip > 0 && c < 1 {
		grads, _, err := o.grads()
		if err != nil {
			return err
		}
		for _, g := range grads {
			g.ScaleInPlace(c)
		}
	}
	return o.Optimizer.Step()
}

// grads returns the gradients the inner optimizer steps with, with
// their parameters: its parameters', each once (a DDP's pieces' under
// ZeRO).
func (o *MeshOptimizer) grads() (out, of []*autograd.Tensor, err error) {
	seen := map[*autograd.Tensor]bool{}
	for _, p := range o.Optimizer.Params() {
		if p.Buffer || p.T == nil || p.T.Released() || seen[p.T] {
			continue
		}
		seen[p.T] = true
		if g := p.T.Grad(); g != nil {
			if !g.DType().IsFloat() || !g.IsContiguous() {
				return nil, nil, fmt.Errorf("parallel: mesh optimizer: the gradient of %q (%v %s) is not a contiguous float tensor", p.Name, g.Shape(), g.DType())
			}
			out, of = append(out, g), append(of, p.T)
		}
	}
	return out, of, nil
}

// sums returns this rank's sums of squares of its gradients: of the
// parameters it holds alone (own) and of the replicated ones (rep); under
// ZeRO each piece is cut at the parameters' bounds.
func (o *MeshOptimizer) sums() (own, rep float64, err error) {
	var ownG, repG []*autograd.Tensor
	if o.ddp != nil && o.ddp.pieces != nil {
		ownG, repG = o.ddp.piecesBy(o.whole)
		defer releaseAll(ownG, repG)
	} else {
		grads, of, err := o.grads()
		if err != nil {
			return 0, 0, err
		}
		for i, g := range grads {
			if o.whole[of[i]] {
				repG = append(repG, g)
			} else {
				ownG = append(ownG, g)
			}
		}
	}
	ss, err := optim.SumSquares("mesh_grad_norm", append(append([]*autograd.Tensor{}, ownG...), repG...), 1)
	if err != nil {
		return 0, 0, err
	}
	for i, s := range ss {
		if i < len(ownG) {
			own += s
		} else {
			rep += s
		}
	}
	return own, rep, nil
}

// piecesBy cuts this rank's pieces' gradients (stages 1–3) at the
// parameters' bounds and returns the views over parameters not in whole
// (and the padding) and over those in whole; the caller releases them.
func (o *Optimizer) piecesBy(whole map[*autograd.Tensor]bool) (own, rep []*autograd.Tensor) {
	d := o.d
	r := d.comm.Rank()
	for k, b := range d.lay.buckets {
		lo, hi := r*b.piece, (r+1)*b.piece // the piece's extent in the bucket
		g := o.pieces[k].Grad()
		at := lo // the first element of the piece not cut off yet
		for _, i := range b.params {
			ps := d.lay.params[i]
			s, e := max(ps.off, lo), min(ps.off+ps.n, hi)
			if s >= e || !whole[d.params[i]] {
				continue
			}
			if s > at {
				own = append(own, view(g, at-lo, []int{s - at}))
			}
			rep = append(rep, view(g, s-lo, []int{e - s}))
			at = e
		}
		if at < hi {
			own = append(own, view(g, at-lo, []int{hi - at}))
		}
	}
	return own, rep
}

// releaseAll releases the tensors of each list.
func releaseAll(lists ...[]*autograd.Tensor) {
	for _, ts := range lists {
		for _, t := range ts {
			t.Release()
		}
	}
}
