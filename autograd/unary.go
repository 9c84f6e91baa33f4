package autograd

import "github.com/headroom-ml/headroom/device"

// Neg returns -t. Saves nothing.
func (t *Tensor) Neg() *Tensor { return unary(device.Neg, "neg", t, 0) }

// Abs returns |t| (gradient 0 at 0). Saves t.
func (t *Tensor) Abs() *Tensor { return unary(device.Abs, "abs", t, 0) }

// Exp returns eᵗ. Saves the output.
func (t *Tensor) Exp() *Tensor { return unary(device.Exp, "exp", t, 0) }

// Log returns the natural logarithm. Saves t.
func (t *Tensor) Log() *Tensor { return unary(device.Log, "log", t, 0) }

// Sqrt returns √t. Saves the output.
func (t *Tensor) Sqrt() *Tensor { return unary(device.Sqrt, "sqrt", t, 0) }

// Rsqrt returns 1/√t. Saves the output.
func (t *Tensor) Rsqrt() *Tensor { return unary(device.Rsqrt, "rsqrt", t, 0) }

// Tanh returns tanh t. Saves the output.
func (t *Tensor) Tanh() *Tensor { return unary(device.Tanh, "tanh", t, 0) }

// Sigmoid returns 1/(1+e⁻ᵗ). Saves the output.
func (t *Tensor) Sigmoid() *Tensor { return unary(device.Sigmoid, "sigmoid", t, 0) }

// ReLU returns max(t, 0) (gradient 0 at 0). Saves the output.
func (t *Tensor) ReLU() *Tensor { return unary(device.Relu, "relu", t, 0) }

// GELU returns the exact GELU, t·Φ(t) with the normal CDF Φ (PyTorch's
// approximate='none'). Saves t.
func (t *Tensor) GELU() *Tensor { return unary(device.GeluErf, "gelu", t, 0) }

// GELUTanh returns the tanh approximation of GELU (approximate='tanh',
// GPT-2's). Saves t.
func (t *Tensor) GELUTanh() *Tensor { return unary(device.GeluTanh, "gelu_tanh", t, 0) }

// Pow returns tᵖ for a constant exponent p. Saves t.
func (t *Tensor) Pow(p float64) *Tensor { return unary(device.Pow, "pow", t, p) }

// Scale returns t·c for a constant c. Saves nothing.
func (t *Tensor) Scale(c float64) *Tensor { return unary(device.Scale, "scale", t, c) }

// AddScalar returns t+c for a constant c. Saves nothing.
func (t *Tensor) AddScalar(c float64) *Tensor { return unary(device.AddScalar, "add_scalar", t, c) }

// reads says which forward values a unary op's gradient needs.
func reads(u device.UnaryOp) (x, y bool) {
	switch u {
	case device.Abs, device.Log, device.GeluTanh, device.GeluErf, device.Pow:
		return true, false
	case device.Exp, device.Sqrt, device.Rsqrt, device.Tanh, device.Sigmoid, device.Relu:
		return false, true
	}
	return false, false
}

func unary(u device.UnaryOp, name string, t *Tensor, arg float64) *Tensor {
	o := begin(name, t)
	if u == device.Exp || u == device.Log || u == device.Pow {
		cast, rel := o.castF32(t)
		defer rel()
		t = cast[0]
	}
	o.oneDType(true, operand{"input", t})
	out := o.empty(t.dt, t.shape)
	if k := o.k(); k != nil {
		k.Unary(u, out.operand(), t.operand(), arg)
	}
	rx, ry := reads(u)
	o.grad([]*Tensor{out}, []*Tensor{t}, []*Tensor{pick(rx, t), pick(ry, out)}, unaryBackward(u, name, arg))
	return out
}

// unaryBackward is the backward of a unary op that saved its input x and
// its output y (either may be nil: see reads).
func unaryBackward(u device.UnaryOp, name string, arg float64) backwardFn {
	return func(c *bctx) []*Tensor {
		g := c.g[0]
		o := begin(name+"_backward", g, c.saved[0], c.saved[1])
		dx := o.empty(g.dt, g.shape)
		gd, fg := dense(g)
		x, fx := dense(c.saved[0])
		y, fy := dense(c.saved[1])
		if k := o.k(); k != nil {
			k.UnaryGrad(u, dx.operand(), gd.operand(), optOperand(x), optOperand(y), arg)
		}
		fg()
		fx()
		fy()
		return []*Tensor{dx}
	}
}

// dense returns t when it is contiguous, else a contiguous copy, with the
// function that releases the copy. nil stays nil.
func dense(t *Tensor) (*Tensor, func()) {
	if t == nil || t.IsContiguous() {
		return t, func() {}
	}
	c := copyDense(t)
	return c, c.Release
}

// copyDense returns a contiguous copy of t that is not recorded in the graph.
func copyDense(t *Tensor) *Tensor {
	o := begin("contiguous", t)
	out := o.empty(t.dt, t.shape)
	if k := o.k(); k != nil {
		k.Copy(out.operand(), t.operand())
	}
	return out
}

func optOperand(t *Tensor) device.Operand {
	if t == nil {
		return device.Operand{}
	}
	return t.operand()
}
