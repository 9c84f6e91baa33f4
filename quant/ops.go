package quant

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// inferenceOnly is the message of the error a converted model gives when
// it is asked to record a graph.
const inferenceOnly = "the quantized model is for inference (run it inside Scope.NoGrad); to train, train the float model (or use QAT) and convert again"

// fail panics with an *autograd.Error for op; autograd.Try and the
// exported functions of this package return it as an error.
func fail(op, format string, args ...any) {
	panic(&autograd.Error{Op: op, Msg: fmt.Sprintf(format, args...)})
}

// operand returns t as a kernel operand.
func operand(t *autograd.Tensor) device.Operand {
	if t == nil {
		return device.Operand{}
	}
	return device.Operand{Block: t.Block(), Off: t.Offset(), DType: t.DType(), Shape: t.Shape(), Strides: t.Strides()}
}

// blockOperand returns a contiguous operand over a whole block (a nil
// operand for a nil block).
func blockOperand(b *device.Block, dt dtype.DType, n int) device.Operand {
	if b == nil {
		return device.Operand{}
	}
	return device.Operand{Block: b, DType: dt, Shape: []int{n}}
}

// work is the borrowed workspace of one op call: raw device blocks tagged
// Workspace and labelled with the op and the layer path, freed together.
type work struct {
	dev    *device.Device
	label  device.Label
	blocks []*device.Block
}

func newWork(dev *device.Device, s *autograd.Scope, op string) *work {
	l := device.Label{Tag: device.Workspace, Op: op}
	if s != nil {
		l.Scope, l.Phase = s.Path(), s.Phase()
	}
	return &work{dev: dev, label: l}
}

// alloc borrows n elements of dt (nil for n = 0). It panics with
// *device.OOMError, after which free still releases what was borrowed.
func (w *work) alloc(dt dtype.DType, n int) *device.Block {
	if n == 0 {
		return nil
	}
	b := w.dev.MustAlloc(int64(n)*int64(dt.Size()), w.label)
	w.blocks = append(w.blocks, b)
	return b
}

func (w *work) free() {
	for _, b := range w.blocks {
		b.Release()
	}
	w.blocks = nil
}

// output allocates an op's result of dtype dt: owned by s (tagged as s tags
// outputs, Activation in forward) or free-standing (tagged Activation,
// owned by the caller) when s is nil, and charged to op.
func output(s *autograd.Scope, dev *device.Device, dt dtype.DType, op string, shape ...int) *autograd.Tensor {
	var t *autograd.Tensor
	if s != nil {
		t = s.Zeros(dev, dt, shape...)
		t.Block().Relabel(op, s.Path())
	} else {
		t = autograd.New(dev, dt, device.Activation, shape...)
		t.Block().Relabel(op, "")
	}
	return t
}

// param allocates a zero-filled tensor of a quantized model: tagged
// Parameter, named name, requiring no gradient.
func param(dev *device.Device, dt dtype.DType, name string, shape ...int) *autograd.Tensor {
	t := autograd.New(dev, dt, device.Parameter, shape...)
	t.Block().Relabel("quant", name)
	return t.SetName(name)
}

// inferenceInput checks the input x of a converted layer with weight w: it
// may not record a graph, and must be a float tensor on w's device. It
// returns x as a contiguous F32 tensor and the function that releases a
// copy made for that.
func inferenceInput(op, name string, x, w *autograd.Tensor) (*autograd.Tensor, func()) {
	if s := x.Scope(); s != nil && s.GradEnabled() {
		fail(op, "%s: %s", name, inferenceOnly)
	}
	if x.Device() != w.Device() {
		fail(op, "%s: input on %s, weights on %s", name, x.Device().Name(), w.Device().Name())
	}
	if !x.DType().IsFloat() {
		fail(op, "%s: input %v %s: want a float tensor", name, x.Shape(), x.DType())
	}
	if x.DType() == dtype.F32 && x.IsContiguous() {
		return x, func() {}
	}
	c := x.Cast(dtype.F32)
	if !c.IsContiguous() {
		d := c.Contiguous()
		c.Release()
		c = d
	}
	return c, c.Release
}

// inputScale returns the scale operand for quantizing x (contiguous F32):
// the static scale when there is one, else max|x|/127 computed into
// workspace w (dynamic, per tensor).
func inputScale(w *work, x *autograd.Tensor, static *autograd.Tensor) device.Operand {
	if static != nil {
		return operand(static)
	}
	sc := blockOperand(w.alloc(dtype.F32, 1), dtype.F32, 1)
	if k := x.Device().Kernels(); k != nil {
		k.QuantScales(sc, operand(x), 1)
	}
	return sc
}

// quantizeInput quantizes x (contiguous F32) into workspace w with the
// scale operand sc and returns the int8 operand.
func quantizeInput(w *work, x *autograd.Tensor, sc device.Operand) device.Operand {
	q := blockOperand(w.alloc(dtype.I8, x.Len()), dtype.I8, x.Len())
	if k := x.Device().Kernels(); k != nil && x.Len() > 0 {
		k.Quantize(q, operand(x), sc, 1)
	}
	return q
}

// Scales returns the symmetric int8 scales of the rows of t (any float
// dtype) viewed as (rows, numel/rows): max(max|row|/127, 2^−23) in an F32
// tensor (rows), computed on the device without a graph. It is owned by
// t's scope, or free-standing (tagged Other, the caller releases it) when
// t has none. With FakeQuantize it quantizes weights per channel (rows =
// output channels) and activations dynamically (rows = 1).
func Scales(t *autograd.Tensor, rows int) *autograd.Tensor {
	if rows <= 0 || t.Len()%rows != 0 || !t.DType().IsFloat() {
		fail("quant.scales", "tensor %v %s in %d rows: want a float tensor and rows dividing its %d elements", t.Shape(), t.DType(), rows, t.Len())
	}
	d := t.Detach()
	defer d.Release()
	src := d
	if d.DType() != dtype.F32 || !d.IsContiguous() {
		src = d.Cast(dtype.F32)
		if !src.IsContiguous() {
			c := src.Contiguous()
			src.Release()
			src = c
		}
		defer src.Release()
	}
	s := t.Scope()
	var sc *autograd.Tensor
	if s != nil {
		sc = s.Zeros(t.Device(), dtype.F32, rows)
		sc.Block().Relabel("quant.scales", s.Path())
	} else {
		sc = autograd.Zeros(t.Device(), dtype.F32, rows)
	}
	if k := t.Device().Kernels(); k != nil && t.Len() > 0 {
		k.QuantScales(operand(sc), operand(src), rows)
	}
	return sc
}

// FakeQuantize returns x quantized to int8 and back (q·scale, q =
// clamp(round(x/scale), −127, 127)), for x of F32 or F64 viewed as (rows,
// numel/rows) and scale an F32 tensor of rows values or one: what a
// quantized layer computes, in floating point, for quantization-aware
// training. Its gradient is the straight-through estimator: the output's
// gradient passes where x/scale rounds into [−127, 127] and is 0 where x
// was clipped; scale gets none (it is a statistic, as in PyTorch's
// FakeQuantize).
//
// Memory: the result (numel(x) elements of x's dtype); it saves x and
// scale (alive already in a layer); backward allocates dx.
func FakeQuantize(x, scale *autograd.Tensor, rows int) *autograd.Tensor {
	const op = "quant.fake_quantize"
	switch {
	case x.DType() != dtype.F32 && x.DType() != dtype.F64:
		fail(op, "input %v %s: want f32 or f64", x.Shape(), x.DType())
	case scale.DType() != dtype.F32 || (scale.Len() != 1 && scale.Len() != rows):
		fail(op, "scale %v %s for %d rows: want f32 with 1 or %d values", scale.Shape(), scale.DType(), rows, rows)
	case rows <= 0 || x.Len()%rows != 0:
		fail(op, "input %v in %d rows: want rows dividing its %d elements", x.Shape(), rows, x.Len())
	case scale.Device() != x.Device():
		fail(op, "input on %s, scale on %s", x.Device().Name(), scale.Device().Name())
	}
	xc := x
	if !x.IsContiguous() {
		xc = x.Contiguous()
		defer xc.Release()
	}
	sc := scale
	if !scale.IsContiguous() {
		sc = scale.Contiguous()
		defer sc.Release()
	}
	s := x.Scope()
	out := output(s, x.Device(), x.DType(), op, x.Shape()...)
	if k := x.Device().Kernels(); k != nil && x.Len() > 0 {
		k.FakeQuantize(operand(out), operand(xc), operand(sc), rows)
	}
	if !x.RequiresGrad() {
		return out
	}
	autograd.Record(autograd.Custom{
		Name: op, Outs: []*autograd.Tensor{out}, Ins: []*autograd.Tensor{x}, Saved: []*autograd.Tensor{xc, sc},
		Backward: func(grads, saved []*autograd.Tensor, need []bool) []*autograd.Tensor {
			if grads[0] == nil || !need[0] {
				return []*autograd.Tensor{nil}
			}
			g := grads[0]
			if !g.IsContiguous() || g.DType() != saved[0].DType() {
				g = g.Cast(saved[0].DType())
				if !g.IsContiguous() {
					c := g.Contiguous()
					g.Release()
					g = c
				}
				defer g.Release()
			}
			dx := output(g.Scope(), g.Device(), g.DType(), op+"_backward", g.Shape()...)
			if dx.Scope() == nil {
				dx.Block().Retag(device.Workspace)
			}
			if k := g.Device().Kernels(); k != nil && g.Len() > 0 {
				k.FakeQuantizeGrad(operand(dx), operand(g), operand(saved[0]), operand(saved[1]), rows)
			}
			return []*autograd.Tensor{dx}
		},
	})
	return out
}
