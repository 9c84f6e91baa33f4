package prune

import (
	"cmp"
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// ResNet removes fraction of the channels internal to every residual block
// of r — KeepCount(C, fraction) of each group's C channels remain — ranked
// by o.By, and returns what it removed.
//
// Which channels: only those that never reach a residual addition, so
// every sum keeps its width and the stem, the shortcuts, the last
// convolution of each block and fc are untouched:
//   - BasicBlock: conv1's output channels, bn1's weight, bias and running
//     statistics, and conv2's input channels;
//   - Bottleneck: the same for conv1 → bn1 → conv2, and for conv2 → bn2 →
//     conv3 (conv2 loses input and output channels).
//
// Each group is ranked by its producing convolution's weights (the
// original ones, before any cut). The blocks' Width fields keep the
// widths they were built with — the block's output (Width, or 4·Width for
// a Bottleneck) — while Conv2d.In and Out and BatchNorm2d.C give the
// pruned sizes. Parameters keep their names, so nn.Save writes the pruned
// model and nn.Load reads it into a model built alike and pruned with the
// same fraction (the shapes depend only on the fractions).
//
// Pruning replaces the parameter tensors with new, smaller ones and
// releases the old ones; afterwards no parameter of r has a gradient (the
// gradients Taylor ranking used are freed, the untouched layers' too, so
// fine-tuning starts clean). An optimizer made before holds state for
// the old tensors: Release it and make a new one over r.Params(). While
// ResNet runs, old and new tensors are both allocated
// (parameter bytes before plus after); afterwards the parameter tag holds
// BytesAfter for the model. On error (a fraction out of [0, 1), Taylor
// ranking without gradients, a block of another kind, running out of
// memory) r is unchanged.
func ResNet(r *nn.ResNet, fraction float64, o Options) (Report, error) {
	const op = "prune.ResNet"
	if r == nil {
		return Report{}, fmt.Errorf("%s: nil model", op)
	}
	if err := checkFraction("fraction", fraction); err != nil {
		return Report{}, fmt.Errorf("%s: %w", where(op, r.Name), err)
	}
	if err := checkCriterion(o.By); err != nil {
		return Report{}, fmt.Errorf("%s: %w", where(op, r.Name), err)
	}
	def := 224
	if r.Config.Stem == "small" {
		def = 28
	}
	h, w := cmp.Or(o.Height, def), cmp.Or(o.Width, def)
	flops, err := FLOPs(r, h, w)
	if err != nil {
		return Report{}, fmt.Errorf("%s: %w", where(op, r.Name), err)
	}
	rep := Report{
		ParamsBefore: nn.Count(r), BytesBefore: nn.ParamBytes(r), FLOPsBefore: flops, Input: []int{h, w},
	}
	p := newPlan()
	for _, blk := range r.Blocks() {
		switch b := blk.(type) {
		case *nn.BasicBlock:
			err = p.channels(b.Conv1, b.BN1, b.Conv2, fraction, o.By)
		case *nn.Bottleneck:
			if err = p.channels(b.Conv1, b.BN1, b.Conv2, fraction, o.By); err == nil {
				err = p.channels(b.Conv2, b.BN2, b.Conv3, fraction, o.By)
			}
		default:
			err = fmt.Errorf("block %T: want *nn.BasicBlock or *nn.Bottleneck", blk)
		}
		if err != nil {
			return Report{}, fmt.Errorf("%s: %w", where(op, r.Name), err)
		}
	}
	if err := p.apply(); err != nil {
		return Report{}, fmt.Errorf("%s: %w", where(op, r.Name), err)
	}
	nn.ZeroGrad(r)
	rep.ParamsAfter, rep.BytesAfter, rep.Layers = nn.Count(r), nn.ParamBytes(r), p.layers
	// The shapes were checked before: counting cannot fail now.
	rep.FLOPsAfter, _ = FLOPs(r, h, w)
	return rep, nil
}

// channels plans the removal of the lowest-ranked output channels of prod,
// with bn's matching channels and next's matching input channels.
func (p *plan) channels(prod *nn.Conv2d, bn *nn.BatchNorm2d, next *nn.Conv2d, fraction float64, by Criterion) error {
	if prod == nil || bn == nil || next == nil {
		return fmt.Errorf("a block with a missing layer")
	}
	for _, c := range []*nn.Conv2d{prod, next} {
		if c.Opt.Groups > 1 {
			return fmt.Errorf("%s: %d groups: only ungrouped convolutions are pruned", c.Name, c.Opt.Groups)
		}
	}
	if err := checkSame(fmt.Sprintf("%s, %s and %s channels", prod.Name, bn.Name, next.Name), prod.Out, bn.C, next.In, prod.Weight.Dim(0), next.Weight.Dim(1)); err != nil {
		return err
	}
	s, err := scores(prod.Weight, by)
	if err != nil {
		return fmt.Errorf("%s: %w", prod.Name, err)
	}
	n := prod.Out
	k := KeepCount(n, fraction)
	keep := Top(s, k)
	p.layers = append(p.layers, LayerReport{Name: prod.Name, Unit: "channels", Before: n, After: k, Kept: keep})
	if k == n {
		return nil
	}
	p.keep(&prod.Weight, 0, keep)
	p.keep(&prod.Bias, 0, keep)
	for _, t := range []**autograd.Tensor{&bn.Weight, &bn.Bias, &bn.RunningMean, &bn.RunningVar} {
		p.keep(t, 0, keep)
	}
	p.keep(&next.Weight, 1, keep)
	p.size(func() { prod.Out, bn.C, next.In = k, k, k })
	return nil
}
