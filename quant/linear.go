package quant

import (
	"slices"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// Linear is y = x·Wᵀ + b computed on the INT8 GEMM: W is stored as int8
// with one F32 scale per output feature (symmetric, per channel), x is
// quantized per tensor — with InputScale when it is set (static), else with
// max|x|/127 of each call (dynamic) — and the exact int32 products are
// dequantized into F32 with the bias added. Inference only: Forward in a
// scope that records a graph panics with *autograd.Error.
//
// Memory: parameters Out·In bytes (weight) + 4·Out (scales) + 4·Out (bias,
// when present) + 4 (InputScale, static only). Forward on x (…, In) with M
// rows allocates y (…, Out), 4·M·Out bytes of F32 (the int32 accumulators
// live in y's memory), and borrows M·In bytes of workspace for the
// quantized x (plus 4 bytes for a dynamic scale, and a contiguous F32 copy
// of x when x is strided or not F32), freed before it returns.
type Linear struct {
	Name        string
	In, Out     int
	Weight      *autograd.Tensor // (Out, In) I8
	WeightScale *autograd.Tensor // (Out) F32
	Bias        *autograd.Tensor // (Out) F32, nil without bias
	InputScale  *autograd.Tensor // (1) F32; nil: dynamic
}

// newLinear allocates a zero Linear on dev (scales zero, to be filled).
func newLinear(dev *device.Device, name string, in, out int, bias, static bool) *Linear {
	l := &Linear{Name: name, In: in, Out: out}
	defer releaseOnPanic(l)
	l.Weight = param(dev, dtype.I8, join(name, "weight"), out, in)
	l.WeightScale = param(dev, dtype.F32, join(name, "weight_scale"), out)
	if bias {
		l.Bias = param(dev, dtype.F32, join(name, "bias"), out)
	}
	if static {
		l.InputScale = param(dev, dtype.F32, join(name, "input_scale"), 1)
	}
	return l
}

// Forward returns x·Wᵀ + b for x (…, In), computed in int8.
func (l *Linear) Forward(x *autograd.Tensor) *autograd.Tensor {
	const op = "quant.linear"
	defer x.Scope().Within(l.Name)()
	if x.Rank() < 1 || x.Dim(-1) != l.In {
		fail(op, "%s: input %v: want (…, %d)", l.Name, x.Shape(), l.In)
	}
	xc, rel := inferenceInput(op, l.Name, x, l.Weight)
	defer rel()
	m := xc.Len() / l.In
	shape := append(slices.Clone(x.Shape()[:x.Rank()-1]), l.Out)
	w := newWork(x.Device(), x.Scope(), op)
	defer w.free()
	y := output(x.Scope(), x.Device(), dtype.F32, op, shape...)
	sc := inputScale(w, xc, l.InputScale)
	xq := quantizeInput(w, xc, sc)
	if k := x.Device().Kernels(); k != nil {
		k.LinearI8(operand(y), xq, operand(l.Weight), sc, operand(l.WeightScale), operand(l.Bias), m, l.Out, l.In)
	}
	return y
}

// Params returns the weight, its scales, the bias and the input scale,
// all as buffers: a quantized layer is not trained.
func (l *Linear) Params() []nn.Param {
	return buffers(l.Weight, l.WeightScale, l.Bias, l.InputScale)
}

// Train does nothing: the layer behaves the same in both modes.
func (l *Linear) Train(bool) {}

// floatLinear is a Linear of a float model prepared for quantization: it
// observes its inputs (calibration) or fake-quantizes them and its weight
// (QAT), and otherwise computes the float layer. It borrows the layer.
type floatLinear struct {
	l *nn.Linear
	q *quantizer
}

func (f *floatLinear) Forward(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(f.l.Name)()
	if !f.q.qat {
		f.q.observe(x)
		xc := asDType(x, f.l.Weight.DType())
		y := autograd.Linear(xc, f.l.Weight, f.l.Bias)
		release(x, xc)
		return y
	}
	s := qatScope("quant.qat_linear", f.l.Name, x)
	xf := f.q.fakeInput(x)
	wf := computable(s.Use(f.l.Weight))
	ws := Scales(wf, f.l.Out)
	wq := FakeQuantize(wf, ws, f.l.Out)
	var b *autograd.Tensor
	if f.l.Bias != nil {
		b = computable(s.Use(f.l.Bias))
	}
	y := autograd.Linear(xf, wq, b)
	release(x, xf, wf, ws, wq, b)
	return y
}

func (f *floatLinear) Params() []nn.Param { return f.l.Params() }
func (f *floatLinear) Train(on bool)      { f.q.training = on }

// convert makes the int8 layer from the float one, with the input scale
// the quantizer observed when static; values are left zero when empty.
func (f *floatLinear) convert(cfg Config, empty bool) *Linear {
	l := f.l
	q := newLinear(l.Weight.Device(), l.Name, l.In, l.Out, l.Bias != nil, cfg.Activations == Static)
	if empty {
		return q
	}
	defer releaseOnPanic(q)
	quantizeWeight(l.Weight, l.Out, q.Weight, q.WeightScale)
	if l.Bias != nil {
		q.Bias.CopyFrom(l.Bias)
	}
	if q.InputScale != nil {
		q.InputScale.SetFloat32s([]float32{f.q.obs.Scale()})
	}
	return q
}

// quantizeWeight quantizes w (rows, …), any float dtype, per row into wq
// (I8) and ws (rows, F32) on the device.
func quantizeWeight(w *autograd.Tensor, rows int, wq, ws *autograd.Tensor) {
	s := autograd.NewScope()
	defer s.Release()
	s.NoGrad(func() {
		src := s.Use(w).Cast(dtype.F32).Contiguous()
		if k := w.Device().Kernels(); k != nil && w.Len() > 0 {
			k.QuantScales(operand(ws), operand(src), rows)
			k.Quantize(operand(wq), operand(src), operand(ws), rows)
		}
	})
	wq.Block().Bump()
	ws.Block().Bump()
}

// asDType returns x in dtype dt: x itself (a new handle) or a cast; the
// caller releases it.
func asDType(x *autograd.Tensor, dt dtype.DType) *autograd.Tensor {
	return x.Cast(dt)
}

// computable returns t (F32 or F64) or, for a 16-bit t, its F32 cast,
// releasing t: FakeQuantize computes in F32 and F64. The cast is recorded,
// so gradients reach the 16-bit parameter.
func computable(t *autograd.Tensor) *autograd.Tensor {
	if t == nil || !t.DType().IsLowPrecision() {
		return t
	}
	c := t.Cast(dtype.F32)
	t.Release()
	return c
}
