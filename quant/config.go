package quant

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// Activations says how a quantized layer chooses its input's scale.
type Activations int

const (
	// Dynamic computes the scale of every call's input from that input,
	// max|x|/127 over the whole batch. It needs no calibration.
	Dynamic Activations = iota
	// Static uses one scale per layer, fixed at conversion from the range
	// an observer recorded during calibration (or QAT).
	Static
)

// String returns "dynamic" or "static".
func (a Activations) String() string {
	switch a {
	case Dynamic:
		return "dynamic"
	case Static:
		return "static"
	}
	return fmt.Sprintf("Activations(%d)", int(a))
}

// ObserverKind selects how an observer turns the ranges of many batches
// into one.
type ObserverKind int

const (
	// DefaultObserver is MinMax for calibration and MovingAverageMinMax for
	// QAT (PyTorch's defaults).
	DefaultObserver ObserverKind = iota
	// MinMax keeps the smallest minimum and the largest maximum seen
	// (torch.ao.quantization.MinMaxObserver).
	MinMax
	// MovingAverageMinMax keeps exponential moving averages of each batch's
	// minimum and maximum, starting from the first batch's
	// (MovingAverageMinMaxObserver).
	MovingAverageMinMax
)

// String returns the observer's name.
func (k ObserverKind) String() string {
	switch k {
	case DefaultObserver:
		return "default"
	case MinMax:
		return "minmax"
	case MovingAverageMinMax:
		return "moving-average-minmax"
	}
	return fmt.Sprintf("ObserverKind(%d)", int(k))
}

// Config configures quantization. Its zero value is: dynamic activations,
// the default observer, averaging constant 0.01.
type Config struct {
	// Activations is Dynamic (the default) or Static.
	Activations Activations
	// Observer is the static observer; DefaultObserver means MinMax for
	// calibration and MovingAverageMinMax for QAT.
	Observer ObserverKind
	// Averaging is MovingAverageMinMax's constant c in
	// avg = avg + c·(batch − avg); 0 means 0.01 (PyTorch's).
	Averaging float64
}

// resolved fills defaults for a prepare of the given kind, or returns an
// error naming the field out of range.
func (c Config) resolved(qat bool) (Config, error) {
	if c.Observer == DefaultObserver {
		c.Observer = MinMax
		if qat {
			c.Observer = MovingAverageMinMax
		}
	}
	if c.Averaging == 0 {
		c.Averaging = 0.01
	}
	switch {
	case c.Activations != Dynamic && c.Activations != Static:
		return c, fmt.Errorf("activations %v: want Dynamic or Static", c.Activations)
	case c.Observer != MinMax && c.Observer != MovingAverageMinMax:
		return c, fmt.Errorf("observer %v: want MinMax or MovingAverageMinMax", c.Observer)
	case !(c.Averaging > 0 && c.Averaging <= 1):
		return c, fmt.Errorf("averaging constant %g: want 0 < c ≤ 1", c.Averaging)
	}
	return c, nil
}

// Observer records the range of the values a layer receives, from which a
// static scale follows: max(−Min, Max, 0)/127 (at least 2^−23).
type Observer struct {
	Kind      ObserverKind // MinMax or MovingAverageMinMax
	Averaging float64      // MovingAverageMinMax's constant
	// Min and Max are the recorded range; Batches counts the batches seen.
	Min, Max float64
	Batches  int
}

// Observe records the range of x: it reads x's minimum and maximum from
// the device (an explicit copy of two numbers; zeros on meta). It records
// no graph.
func (o *Observer) Observe(x *autograd.Tensor) {
	if x.Len() == 0 {
		return
	}
	d := x.Detach()
	lo, hi := d.Min(false), d.Max(false)
	mn, mx := lo.Item(), hi.Item()
	release(nil, d, lo, hi)
	o.Update(mn, mx)
}

// Update records one batch whose values lie in [mn, mx].
func (o *Observer) Update(mn, mx float64) {
	switch {
	case o.Batches == 0:
		o.Min, o.Max = mn, mx
	case o.Kind == MovingAverageMinMax:
		o.Min += o.Averaging * (mn - o.Min)
		o.Max += o.Averaging * (mx - o.Max)
	default:
		o.Min, o.Max = min(o.Min, mn), max(o.Max, mx)
	}
	o.Batches++
}

// Scale returns the symmetric int8 scale of the recorded range,
// max(−Min, Max, 0)/127 rounded to float32, at least 2^−23 (the scale of
// an observer that has seen nothing, which quantizes everything to 0).
func (o *Observer) Scale() float32 {
	m := float32(max(-o.Min, o.Max, 0))
	if math.IsNaN(float64(m)) {
		m = 0
	}
	return max(m/127, 0x1p-23)
}

// quantizer is the quantization state of one layer of a prepared model:
// its observer, and whether it fake-quantizes (QAT) and is training.
type quantizer struct {
	act         Activations
	obs         *Observer
	qat         bool
	training    bool
	calibrating bool // Calibrate is running: observe in any mode
}

func newQuantizer(cfg Config, qat bool) *quantizer {
	return &quantizer{act: cfg.Activations, obs: &Observer{Kind: cfg.Observer, Averaging: cfg.Averaging}, qat: qat, training: true}
}

// observe records x's range when activations are static.
func (q *quantizer) observe(x *autograd.Tensor) {
	if q.act == Static {
		q.obs.Observe(x)
	}
}

// fakeInput returns x fake-quantized per tensor for QAT: with the
// observer's scale when static (the observer records x first when
// training, or when it has seen nothing yet), else with max|x|/127.
func (q *quantizer) fakeInput(x *autograd.Tensor) *autograd.Tensor {
	var sc *autograd.Tensor
	if q.act == Static {
		if q.training || q.calibrating || q.obs.Batches == 0 {
			q.obs.Observe(x)
		}
		sc = x.Scope().FromFloat32s(x.Device(), []int{1}, []float32{q.obs.Scale()})
	} else {
		sc = Scales(x, 1)
	}
	xin := x
	if x.DType() != dtype.F32 && x.DType() != dtype.F64 {
		xin = x.Cast(dtype.F32)
		defer xin.Release()
	}
	out := FakeQuantize(xin, sc, 1)
	sc.Release()
	return out
}

// qatScope returns x's scope, which a QAT forward needs.
func qatScope(op, name string, x *autograd.Tensor) *autograd.Scope {
	s := x.Scope()
	if s == nil {
		fail(op, "%s: input %v is free-standing: a QAT forward needs inputs made in a Scope", name, x.Shape())
	}
	return s
}

// releaseOnPanic, deferred by a constructor, releases what the module
// under construction holds when it panics, and panics on.
func releaseOnPanic(m nn.Module) {
	if r := recover(); r != nil {
		nn.Release(m)
		panic(r)
	}
}

// buffers lists the non-nil tensors as untrained params named after them.
func buffers(ts ...*autograd.Tensor) []nn.Param {
	var ps []nn.Param
	for _, t := range ts {
		if t != nil {
			ps = append(ps, nn.Param{Name: t.Name(), T: t, Buffer: true})
		}
	}
	return ps
}

// release drops the handles among ts other than keep.
func release(keep *autograd.Tensor, ts ...*autograd.Tensor) {
	for _, t := range ts {
		if t != nil && t != keep {
			t.Release()
		}
	}
}

// join makes a dotted name.
func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
