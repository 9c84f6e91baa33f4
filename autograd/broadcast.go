package autograd

import "github.com/headroom-ml/headroom/device"

// broadcastShapes returns the shape two shapes broadcast to (NumPy rules:
// align at the right; sizes equal or one of them 1).
func broadcastShapes(op string, a, b []int) []int {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := range n {
		da, db := 1, 1
		if j := i - (n - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (n - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db, db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			fail(op, "shapes %v and %v do not broadcast (dimension %d: %d vs %d)", a, b, i-n, da, db)
		}
	}
	return out
}

// expanded returns t as an operand of shape (which t broadcasts to), with
// stride 0 along broadcast dimensions.
func (t *Tensor) expanded(shape []int) device.Operand {
	o := t.operand()
	if sameShape(t.shape, shape) {
		return o
	}
	st := make([]int, len(shape))
	lead := len(shape) - len(t.shape)
	for i := range shape {
		j := i - lead
		if j < 0 || (t.shape[j] == 1 && shape[i] != 1) {
			continue
		}
		st[i] = t.strides[j]
	}
	o.Shape, o.Strides = shape, st
	return o
}

// sumTo reduces a gradient g (consumed) to shape, summing over the
// dimensions that broadcasting expanded. It returns g itself when no
// reduction is needed.
func sumTo(g *Tensor, shape []int) *Tensor {
	if sameShape(g.shape, shape) {
		return g
	}
	lead := len(g.shape) - len(shape)
	keep := make([]int, len(g.shape)) // g's rank, 1 where summed
	for i := range g.shape {
		j := i - lead
		if j < 0 || (shape[j] == 1 && g.shape[i] != 1) {
			keep[i] = 1
		} else {
			keep[i] = g.shape[i]
		}
	}
	o := begin("sum_to", g)
	r := o.empty(g.dt, keep)
	if k := o.k(); k != nil {
		k.Reduce(device.Sum, r.operand(), g.operand(), 0)
	}
	g.Release()
	v := r.reshapeView(shape)
	r.Release()
	return v
}

// reshapeView returns a new handle on a contiguous t with another shape.
func (t *Tensor) reshapeView(shape []int) *Tensor {
	o := &op{name: "reshape", s: t.scope, dev: t.dev}
	if t.kept {
		o.s = nil
	}
	return o.view(t, t.off, append([]int(nil), shape...), denseStrides(shape))
}
