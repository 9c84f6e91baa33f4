package autograd

import (
	"slices"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Sum sums over axes (all when none are given); keep retains reduced
// dimensions with size 1. Saves nothing.
func (t *Tensor) Sum(keep bool, axes ...int) *Tensor {
	return reduce(device.Sum, "sum", t, keep, axes, 0)
}

// Mean averages over axes (all when none). Saves nothing.
func (t *Tensor) Mean(keep bool, axes ...int) *Tensor {
	return reduce(device.Mean, "mean", t, keep, axes, 0)
}

// Max takes the maximum over axes (all when none); the gradient is shared
// equally among tied maxima (torch.amax). Saves t and the result.
func (t *Tensor) Max(keep bool, axes ...int) *Tensor {
	return reduce(device.Max, "max", t, keep, axes, 0)
}

// Min takes the minimum over axes. Saves t and the result.
func (t *Tensor) Min(keep bool, axes ...int) *Tensor {
	return reduce(device.Min, "min", t, keep, axes, 0)
}

// Var returns the variance over axes with the given correction (0:
// population, 1: sample, PyTorch's default). Saves t.
func (t *Tensor) Var(correction int, keep bool, axes ...int) *Tensor {
	return reduce(device.Var, "var", t, keep, axes, float64(correction))
}

// ArgMax returns the I64 index of the maximum along axis (the first on
// ties); not differentiable.
func (t *Tensor) ArgMax(axisN int, keep bool) *Tensor {
	o := begin("argmax", t)
	o.record = false
	kshape, shape := reducedShapes("argmax", t.shape, []int{axisN}, keep)
	out := o.empty(dtype.I64, kshape)
	if k := o.k(); k != nil {
		k.Reduce(device.ArgMax, out.operand(), t.operand(), 0)
	}
	if keep {
		return out
	}
	v := out.reshapeView(shape)
	out.Release()
	return v
}

// reducedShapes returns the shape with reduced axes kept as 1 and the final
// shape (without them unless keep).
func reducedShapes(op string, in []int, axes []int, keep bool) (kshape, shape []int) {
	r := len(in)
	red := make([]bool, r)
	if len(axes) == 0 {
		for i := range red {
			red[i] = true
		}
	}
	for _, a := range axes {
		a = axis(op, a, r)
		if red[a] {
			fail(op, "axis %d repeated in %v", a, axes)
		}
		red[a] = true
	}
	kshape = slices.Clone(in)
	for i := range in {
		if red[i] {
			kshape[i] = 1
		} else {
			shape = append(shape, in[i])
		}
	}
	if keep {
		shape = kshape
	}
	if shape == nil {
		shape = []int{}
	}
	return kshape, shape
}

func reduce(rop device.ReduceOp, name string, t *Tensor, keep bool, axes []int, arg float64) *Tensor {
	o := begin(name, t)
	if rop == device.Sum || rop == device.Mean || rop == device.Var {
		cast, rel := o.castF32(t)
		defer rel()
		t = cast[0]
	}
	o.oneDType(rop == device.Mean || rop == device.Var, operand{"input", t})
	kshape, shape := reducedShapes(name, t.shape, axes, keep)
	count := numel(t.shape) / max(numel(kshape), 1)
	if numel(kshape) == 0 {
		count = 0
	}
	if count == 0 && rop != device.Sum && rop != device.Mean {
		fail(name, "reduction over an empty dimension of %v", t.shape)
	}
	out := o.empty(t.dt, kshape)
	if k := o.k(); k != nil {
		k.Reduce(rop, out.operand(), t.operand(), arg)
	}
	var save []*Tensor
	switch rop {
	case device.Max, device.Min:
		save = []*Tensor{t, out}
	case device.Var:
		save = []*Tensor{t}
	}
	in := t.shape
	o.grad([]*Tensor{out}, []*Tensor{t}, save, func(c *bctx) []*Tensor {
		g, fg := dense(c.g[0])
		defer fg()
		o := begin(name+"_backward", g)
		gx := expandedTensor(g, kshape, in)
		defer gx.Release()
		switch rop {
		case device.Sum, device.Mean:
			dx := o.empty(g.dt, in)
			if k := o.k(); k != nil {
				s := 1.0
				if rop == device.Mean {
					s = 1 / float64(count)
				}
				k.Unary(device.Scale, dx.operand(), gx.operand(), s)
			}
			return []*Tensor{dx}
		case device.Var:
			x := c.saved[0]
			mean := x.Mean(true, axes...)
			diff := x.Sub(mean)
			mean.Release()
			dx := diff.Mul(gx)
			diff.Release()
			if k := o.k(); k != nil {
				k.Unary(device.Scale, dx.operand(), dx.operand(), 2/(float64(count)-arg))
			}
			return []*Tensor{dx}
		default: // Max, Min
			x, r := c.saved[0], c.saved[1]
			mask := compare(device.Eq, name+"_backward", x, r)
			cnt := mask.Sum(true, axes...)
			num := mask.Mul(gx)
			dx := num.Div(cnt)
			for _, t := range []*Tensor{mask, cnt, num} {
				t.Release()
			}
			return []*Tensor{dx}
		}
	})
	if keep {
		return out
	}
	v := out.Reshape(shape...)
	out.Release()
	return v
}

// expandedTensor returns a view of g (whose shape has kshape's elements)
// broadcast to shape.
func expandedTensor(g *Tensor, kshape, shape []int) *Tensor {
	r := g.reshapeView(kshape)
	e := r.expanded(shape)
	o := &op{name: "expand", s: r.scope, dev: r.dev}
	if r.kept {
		o.s = nil
	}
	v := o.view(r, r.off, shape, e.Strides)
	r.Release()
	return v
}
