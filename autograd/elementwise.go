package autograd

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Add returns a+b with broadcasting (NumPy rules). Saves nothing.
func (a *Tensor) Add(b *Tensor) *Tensor { return binary(device.Add, "add", a, b) }

// Sub returns a-b with broadcasting. Saves nothing.
func (a *Tensor) Sub(b *Tensor) *Tensor { return binary(device.Sub, "sub", a, b) }

// Mul returns a·b elementwise with broadcasting. Saves b when a needs a
// gradient and a when b does.
func (a *Tensor) Mul(b *Tensor) *Tensor { return binary(device.Mul, "mul", a, b) }

// Div returns a/b elementwise with broadcasting. Saves b, and a when b needs
// a gradient.
func (a *Tensor) Div(b *Tensor) *Tensor { return binary(device.Div, "div", a, b) }

// Maximum returns the elementwise maximum (ties share the gradient equally).
// Saves a and b.
func (a *Tensor) Maximum(b *Tensor) *Tensor { return binary(device.Maximum, "maximum", a, b) }

// Minimum returns the elementwise minimum (ties share the gradient equally).
// Saves a and b.
func (a *Tensor) Minimum(b *Tensor) *Tensor { return binary(device.Minimum, "minimum", a, b) }

// Eq returns 1 where a == b and 0 elsewhere, in a's dtype (the wider one
// for two integer dtypes); not differentiable. Integers compare exactly up
// to 2^24.
func (a *Tensor) Eq(b *Tensor) *Tensor { return compare(device.Eq, "eq", a, b) }

// Ne returns 1 where a ≠ b.
func (a *Tensor) Ne(b *Tensor) *Tensor { return compare(device.Ne, "ne", a, b) }

// Lt returns 1 where a < b.
func (a *Tensor) Lt(b *Tensor) *Tensor { return compare(device.Lt, "lt", a, b) }

// Le returns 1 where a ≤ b.
func (a *Tensor) Le(b *Tensor) *Tensor { return compare(device.Le, "le", a, b) }

// Gt returns 1 where a > b.
func (a *Tensor) Gt(b *Tensor) *Tensor { return compare(device.Gt, "gt", a, b) }

// Ge returns 1 where a ≥ b.
func (a *Tensor) Ge(b *Tensor) *Tensor { return compare(device.Ge, "ge", a, b) }

func compare(bop device.BinaryOp, name string, a, b *Tensor) *Tensor {
	o := begin(name, a, b)
	o.record = false
	dt := o.oneDType(false, operand{"a", a}, operand{"b", b})
	shape := broadcastShapes(name, a.shape, b.shape)
	out := o.empty(dt, shape)
	if k := o.k(); k != nil {
		k.Binary(bop, out.operand(), a.expanded(shape), b.expanded(shape))
	}
	return out
}

func binary(bop device.BinaryOp, name string, a, b *Tensor) *Tensor {
	o := begin(name, a, b)
	dt := o.oneDType(false, operand{"a", a}, operand{"b", b})
	shape := broadcastShapes(name, a.shape, b.shape)
	out := o.empty(dt, shape)
	if k := o.k(); k != nil {
		k.Binary(bop, out.operand(), a.expanded(shape), b.expanded(shape))
	}
	if !o.records() {
		return out
	}
	ga, gb := a.requiresGrad, b.requiresGrad
	as, bs := a.shape, b.shape
	var save []*Tensor
	switch bop {
	case device.Mul:
		save = []*Tensor{pick(gb, a), pick(ga, b)}
	case device.Div:
		save = []*Tensor{pick(gb, a), b}
	case device.Maximum, device.Minimum:
		save = []*Tensor{a, b}
	}
	o.grad([]*Tensor{out}, []*Tensor{a, b}, save, func(c *bctx) []*Tensor {
		g := c.g[0]
		var da, db *Tensor
		switch bop {
		case device.Add:
			if c.need[0] {
				da = share(g)
			}
			if c.need[1] {
				db = share(g)
			}
		case device.Sub:
			if c.need[0] {
				da = share(g)
			}
			if c.need[1] {
				db = g.Neg()
			}
		case device.Mul:
			if c.need[0] {
				da = g.Mul(c.saved[1])
			}
			if c.need[1] {
				db = g.Mul(c.saved[0])
			}
		case device.Div:
			x, y := c.saved[0], c.saved[1]
			if c.need[0] {
				da = g.Div(y)
			}
			if c.need[1] {
				// d(x/y)/dy = -x/y²
				t := g.Mul(x)
				y2 := y.Mul(y)
				q := t.Div(y2)
				t.Release()
				y2.Release()
				db = q.Neg()
				q.Release()
			}
		case device.Maximum, device.Minimum:
			da, db = minmaxGrad(bop, g, c.saved[0], c.saved[1], c.need)
		}
		if da != nil {
			da = sumTo(da, as)
		}
		if db != nil {
			db = sumTo(db, bs)
		}
		return []*Tensor{da, db}
	})
	return out
}

// pick returns t when cond holds, else nil.
func pick(cond bool, t *Tensor) *Tensor {
	if cond {
		return t
	}
	return nil
}

// share returns a new handle on t's storage with t's layout and owner.
func share(t *Tensor) *Tensor {
	o := &op{name: "share", s: t.scope, dev: t.dev}
	if t.kept {
		o.s = nil
	}
	return o.view(t, t.off, t.shape, t.strides)
}

// minmaxGrad routes g to the winner of each comparison, half to each on ties.
func minmaxGrad(bop device.BinaryOp, g, a, b *Tensor, need []bool) (da, db *Tensor) {
	win := device.Gt
	if bop == device.Minimum {
		win = device.Lt
	}
	half := g.Scale(0.5)
	route := func(x, y *Tensor) *Tensor {
		w := compare(win, "minmax_grad", x, y)
		tie := compare(device.Eq, "minmax_grad", x, y)
		gw := g.Mul(w)
		gt := half.Mul(tie)
		r := gw.Add(gt)
		for _, t := range []*Tensor{w, tie, gw, gt} {
			t.Release()
		}
		return r
	}
	if need[0] {
		da = route(a, b)
	}
	if need[1] {
		db = route(b, a)
	}
	half.Release()
	return da, db
}

// Where returns cond ≠ 0 ? a : b elementwise, broadcasting all three.
// Saves cond.
func Where(cond, a, b *Tensor) *Tensor {
	o := begin("where", cond, a, b)
	dt := o.oneDType(false, operand{"a", a}, operand{"b", b})
	shape := broadcastShapes("where", broadcastShapes("where", cond.shape, a.shape), b.shape)
	out := o.empty(dt, shape)
	if k := o.k(); k != nil {
		k.Where(out.operand(), cond.expanded(shape), a.expanded(shape), b.expanded(shape))
	}
	if !o.records() {
		return out
	}
	as, bs := a.shape, b.shape
	o.grad([]*Tensor{out}, []*Tensor{nil, a, b}, []*Tensor{cond}, func(c *bctx) []*Tensor {
		g, cd := c.g[0], c.saved[0]
		res := make([]*Tensor, 3)
		if c.need[1] || c.need[2] {
			zero := zeroLike(g, []int{})
			if c.need[1] {
				res[1] = sumTo(Where(cd, g, zero), as)
			}
			if c.need[2] {
				res[2] = sumTo(Where(cd, zero, g), bs)
			}
			zero.Release()
		}
		return res
	})
	return out
}

// MaskedFill returns t with v wherever mask ≠ 0 (mask broadcasts to t).
// Saves mask.
func MaskedFill(t, mask *Tensor, v float64) *Tensor {
	o := begin("masked_fill", t, mask)
	fillv := alloc(o.s, o.dev, t.dt, []int{}, o.s.label("masked_fill"))
	fill(fillv, v)
	out := Where(mask, fillv, t)
	fillv.Release()
	return out
}

// zeroLike returns a zero tensor of shape with t's dtype, device and owner.
func zeroLike(t *Tensor, shape []int) *Tensor {
	o := begin("zeros", t)
	return o.zeros(t.dt, shape)
}

// Scalar returns a one-element tensor of shape () owned like t, holding v in
// t's dtype: for combining a tensor with a constant.
func (t *Tensor) Scalar(v float64) *Tensor {
	o := begin("scalar", t)
	s := o.empty(t.dt, []int{})
	fill(s, v)
	return s
}

// Cast returns t converted to dt (a copy; t itself when dt is its dtype,
// as a new handle). The gradient is cast back.
func (t *Tensor) Cast(dt dtype.DType) *Tensor {
	o := begin("cast", t)
	if dt == t.dt {
		return o.viewOp(t, t.off, t.shape, t.strides)
	}
	out := o.empty(dt, t.shape)
	if k := o.k(); k != nil {
		k.Copy(out.operand(), t.operand())
	}
	from := t.dt
	o.grad([]*Tensor{out}, []*Tensor{t}, nil, func(c *bctx) []*Tensor {
		return []*Tensor{c.g[0].Cast(from)}
	})
	return out
}
