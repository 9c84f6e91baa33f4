package autograd_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// dtOp builds one op from a scope's tensors: a is the dtype of the op's
// first operand, b the dtype of the operand checked against it.
type dtOp struct {
	op string // the op the error must name
	f  func(s *autograd.Scope, dev *device.Device, a, b dtype.DType) *autograd.Tensor
}

// z makes a zero tensor owned by s; the values do not matter here.
func z(s *autograd.Scope, dev *device.Device, dt dtype.DType, shape ...int) *autograd.Tensor {
	return s.Zeros(dev, dt, shape...)
}

// dtFamilies has, per op family, ops whose two operands must share one
// dtype (float or integer alike).
var dtFamilies = map[string][]dtOp{
	"elementwise": {
		{"add", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return z(s, d, a, 2, 3).Add(z(s, d, b, 3))
		}},
		{"sub", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return z(s, d, a, 2, 3).Sub(z(s, d, b, 2, 3))
		}},
		{"mul", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return z(s, d, a, 2, 3).Mul(z(s, d, b, 1))
		}},
		{"div", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return z(s, d, a, 3).Div(z(s, d, b, 3))
		}},
		{"maximum", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return z(s, d, a, 3).Maximum(z(s, d, b, 3))
		}},
		{"minimum", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return z(s, d, a, 3).Minimum(z(s, d, b, 3))
		}},
	},
	"compare": {
		{"eq", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return z(s, d, a, 3).Eq(z(s, d, b, 3))
		}},
		{"lt", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return z(s, d, a, 3).Lt(z(s, d, b, 3))
		}},
	},
	"select": {
		{"where", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return autograd.Where(z(s, d, dtype.I64, 3), z(s, d, a, 3), z(s, d, b, 3))
		}},
		{"concat", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return autograd.Concat(0, z(s, d, a, 2), z(s, d, b, 3))
		}},
	},
	"products": {
		{"matmul", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return z(s, d, a, 2, 3).MatMul(z(s, d, b, 3, 4))
		}},
		{"linear", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return autograd.Linear(z(s, d, a, 2, 3), z(s, d, b, 4, 3), z(s, d, b, 4))
		}},
		{"linear", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor { // the bias alone
			return autograd.Linear(z(s, d, a, 2, 3), z(s, d, a, 4, 3), z(s, d, b, 4))
		}},
		{"conv2d", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return autograd.Conv2d(z(s, d, a, 1, 2, 4, 4), z(s, d, b, 3, 2, 3, 3), nil, autograd.ConvOptions{})
		}},
		{"scaled_dot_product_attention", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			q := z(s, d, a, 1, 2, 3, 4)
			return autograd.ScaledDotProductAttention(q, z(s, d, b, 1, 2, 3, 4), z(s, d, b, 1, 2, 3, 4), true)
		}},
	},
	"norms": {
		{"layer_norm", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return autograd.LayerNorm(z(s, d, a, 2, 3), z(s, d, b, 3), nil, 1e-5)
		}},
		{"batch_norm", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return autograd.BatchNorm2d(z(s, d, a, 2, 3, 2, 2), z(s, d, b, 3), nil, nil, nil, true, 0.1, 1e-5)
		}},
	},
	"losses": {
		{"mse_loss", func(s *autograd.Scope, d *device.Device, a, b dtype.DType) *autograd.Tensor {
			return autograd.MSELoss(z(s, d, a, 2, 3), z(s, d, b, 2, 3))
		}},
	},
}

// dtFloatOnly has ops of one operand that want a float.
var dtFloatOnly = map[string][]dtOp{
	"activations": {
		{"relu", func(s *autograd.Scope, d *device.Device, a, _ dtype.DType) *autograd.Tensor {
			return z(s, d, a, 3).ReLU()
		}},
		{"exp", func(s *autograd.Scope, d *device.Device, a, _ dtype.DType) *autograd.Tensor {
			return z(s, d, a, 3).Exp()
		}},
		{"scale", func(s *autograd.Scope, d *device.Device, a, _ dtype.DType) *autograd.Tensor {
			return z(s, d, a, 3).Scale(0.5)
		}},
		{"softmax", func(s *autograd.Scope, d *device.Device, a, _ dtype.DType) *autograd.Tensor {
			return autograd.Softmax(z(s, d, a, 2, 3), -1)
		}},
	},
	"reductions": {
		{"mean", func(s *autograd.Scope, d *device.Device, a, _ dtype.DType) *autograd.Tensor {
			return z(s, d, a, 3).Mean(false)
		}},
		{"var", func(s *autograd.Scope, d *device.Device, a, _ dtype.DType) *autograd.Tensor {
			return z(s, d, a, 3).Var(1, false)
		}},
	},
	"layers": {
		{"linear", func(s *autograd.Scope, d *device.Device, a, _ dtype.DType) *autograd.Tensor {
			return autograd.Linear(z(s, d, a, 2, 3), z(s, d, a, 4, 3), nil)
		}},
		{"matmul", func(s *autograd.Scope, d *device.Device, a, _ dtype.DType) *autograd.Tensor {
			return z(s, d, a, 2, 3).MatMul(z(s, d, a, 3, 2))
		}},
		{"layer_norm", func(s *autograd.Scope, d *device.Device, a, _ dtype.DType) *autograd.Tensor {
			return autograd.LayerNorm(z(s, d, a, 2, 3), nil, nil, 1e-5)
		}},
		{"cross_entropy", func(s *autograd.Scope, d *device.Device, a, _ dtype.DType) *autograd.Tensor {
			return autograd.CrossEntropy(z(s, d, a, 2, 3), z(s, d, dtype.I64, 2), autograd.CEOptions{})
		}},
	},
}

// opError runs f and returns the *autograd.Error it panicked with, nil if
// it did not fail; another error fails the test.
func opError(t *testing.T, f func()) *autograd.Error {
	t.Helper()
	err := autograd.Try(f)
	if err == nil {
		return nil
	}
	var ae *autograd.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T), want *autograd.Error", err, err)
	}
	return ae
}

// wantDTypeError checks that f fails with an *Error of op that names the
// dtypes a and b (b Invalid: a alone), and that the op failed before
// allocating anything.
func wantDTypeError(t *testing.T, dev *device.Device, op string, a, b dtype.DType, f func()) {
	t.Helper()
	madeBy := func() (n int64) {
		for _, g := range dev.Live() {
			if g.Creator == op {
				n += g.Bytes
			}
		}
		return n
	}
	before := madeBy()
	e := opError(t, f)
	named := e != nil && strings.Contains(e.Msg, a.String()) && (b == dtype.Invalid || strings.Contains(e.Msg, b.String()))
	switch {
	case e == nil:
		t.Errorf("%s with %s and %s: no error, want one naming the dtypes", op, a, b)
	case e.Op != op || !named:
		t.Errorf("%s with %s and %s: error %q, want op %q naming the dtypes", op, a, b, e, op)
	}
	if n := madeBy(); n != before {
		t.Errorf("%s with %s and %s: the failed op allocated %d bytes", op, a, b, n-before)
	}
}

// TestMixedDTypesFail checks, family by family, that an op refuses
// operands of two dtypes — F32 with F64 both ways, a float with an
// integer both ways — with an *Error naming it and both dtypes, that it
// runs with one dtype, and that autocast's mixtures still run.
func TestMixedDTypesFail(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	pairs := [][2]dtype.DType{{dtype.F32, dtype.F64}, {dtype.F64, dtype.F32}, {dtype.F32, dtype.I64}, {dtype.I64, dtype.F32}}
	for fam, ops := range dtFamilies {
		for i, c := range ops {
			t.Run(fmt.Sprintf("%s/%d_%s", fam, i, c.op), func(t *testing.T) {
				s := autograd.NewScope()
				defer s.Release()
				for _, p := range pairs {
					wantDTypeError(t, dev, c.op, p[0], p[1], func() { c.f(s, dev, p[0], p[1]) })
				}
				for _, dt := range []dtype.DType{dtype.F32, dtype.F64} {
					if e := opError(t, func() { c.f(s, dev, dt, dt) }); e != nil {
						t.Errorf("%s with %s alone: %v", c.op, dt, e)
					}
				}
			})
		}
	}
	for fam, ops := range dtFloatOnly {
		for i, c := range ops {
			t.Run(fmt.Sprintf("%s/%d_%s", fam, i, c.op), func(t *testing.T) {
				s := autograd.NewScope()
				defer s.Release()
				for _, dt := range []dtype.DType{dtype.I64, dtype.I32} {
					wantDTypeError(t, dev, c.op, dt, dtype.Invalid, func() { c.f(s, dev, dt, dt) })
				}
				for _, dt := range []dtype.DType{dtype.F32, dtype.F64} {
					if e := opError(t, func() { c.f(s, dev, dt, dt) }); e != nil {
						t.Errorf("%s on %s: %v", c.op, dt, e)
					}
				}
			})
		}
	}
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("%d blocks live at the end: %v", n, dev.Live())
	}
}

// TestDTypeExceptions checks the mixtures that are allowed: autocast's,
// backward through them, and the operands whose contract takes another
// dtype (conditions, masks, indices, targets, running statistics, two
// integer dtypes).
func TestDTypeExceptions(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	s := autograd.NewScope()
	defer s.Release()
	bf := dtype.BF16
	ok := func(what string, want dtype.DType, f func() *autograd.Tensor) {
		t.Helper()
		var y *autograd.Tensor
		if e := opError(t, func() { y = f() }); e != nil {
			t.Errorf("%s: %v", what, e)
		} else if y.DType() != want {
			t.Errorf("%s: dtype %s, want %s", what, y.DType(), want)
		}
	}
	w := autograd.Param(dev, dtype.F32, "w", 4, 3)
	defer w.Release()
	s.Autocast(bf, func() {
		ok("autocast: f32 + bf16", dtype.F32, func() *autograd.Tensor { return z(s, dev, dtype.F32, 2, 3).Add(z(s, dev, bf, 2, 3)) })
		ok("autocast: layer_norm of bf16 with an f32 weight", bf, func() *autograd.Tensor {
			return autograd.LayerNorm(z(s, dev, bf, 2, 3), z(s, dev, dtype.F32, 3), nil, 1e-5)
		})
		ok("autocast: linear of f32 operands", bf, func() *autograd.Tensor { return autograd.Linear(z(s, dev, dtype.F32, 2, 3), w, nil) })
		wantDTypeError(t, dev, "linear", dtype.I64, dtype.Invalid, func() { autograd.Linear(z(s, dev, dtype.I64, 2, 3), w, nil) })
	})
	wantDTypeError(t, dev, "add", dtype.F32, bf, func() { z(s, dev, dtype.F32, 2, 3).Add(z(s, dev, bf, 2, 3)) })
	wantDTypeError(t, dev, "layer_norm", bf, dtype.F32, func() { autograd.LayerNorm(z(s, dev, bf, 2, 3), z(s, dev, dtype.F32, 3), nil, 1e-5) })

	ok("where with an f32 condition", dtype.F64, func() *autograd.Tensor {
		return autograd.Where(z(s, dev, dtype.F32, 3), z(s, dev, dtype.F64, 3), z(s, dev, dtype.F64, 3))
	})
	ok("masked_fill with an f32 mask", dtype.F64, func() *autograd.Tensor {
		return autograd.MaskedFill(z(s, dev, dtype.F64, 3), z(s, dev, dtype.F32, 3), -1)
	})
	ok("embedding with i32 indices", dtype.F64, func() *autograd.Tensor {
		return autograd.Embedding(z(s, dev, dtype.F64, 5, 2), z(s, dev, dtype.I32, 3))
	})
	ok("cross_entropy with i32 targets", dtype.F32, func() *autograd.Tensor {
		return autograd.CrossEntropy(z(s, dev, dtype.F32, 2, 3), z(s, dev, dtype.I32, 2), autograd.CEOptions{})
	})
	ok("batch_norm of bf16 with f32 running statistics", bf, func() *autograd.Tensor {
		return autograd.BatchNorm2d(z(s, dev, bf, 2, 3, 2), z(s, dev, bf, 3), nil, z(s, dev, dtype.F32, 3), z(s, dev, dtype.F32, 3), true, 0.1, 1e-5)
	})
	ok("i32 + i64", dtype.I64, func() *autograd.Tensor { return z(s, dev, dtype.I32, 3).Add(z(s, dev, dtype.I64, 3)) })
	ok("sum of i64", dtype.I64, func() *autograd.Tensor { return z(s, dev, dtype.I64, 3).Sum(false) })
}

// TestAutocastMixtureBackward runs backward through autocast's mixture —
// an F32 residual plus a BF16 linear output, then a BF16 layer-norm with
// F32 weights — and checks that the parameters' gradients arrive in F32,
// within BF16 accuracy of the F32 run's.
func TestAutocastMixtureBackward(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	rng := rand.New(rand.NewPCG(3, 3))
	w := autograd.Param(dev, dtype.F32, "w", 4, 4)
	v := make([]float64, 16)
	for i := range v {
		v[i] = 2*rng.Float64() - 1
	}
	w.SetFloat64s(v)
	g := autograd.Full(dev, dtype.F32, 1, 4).SetRequiresGrad(true)
	defer autogradtest.Release(w, g)
	run := func(dt dtype.DType) []float64 {
		s := autograd.NewScope()
		err := s.Run(func() error {
			var loss *autograd.Tensor
			s.Autocast(dt, func() {
				x := s.Full(dev, dtype.F32, 0.5, 2, 4)
				h := x.Add(autograd.Linear(x, w, nil))
				loss = autograd.LayerNorm(h, g, nil, 1e-5).Mul(h).Sum(false)
			})
			return loss.Backward()
		})
		if err != nil {
			t.Fatalf("autocast %s: %v", dt, err)
		}
		if w.Grad().DType() != dtype.F32 || g.Grad().DType() != dtype.F32 {
			t.Errorf("autocast %s: gradients %s and %s, want f32", dt, w.Grad().DType(), g.Grad().DType())
		}
		v := append(w.Grad().Float64s(), g.Grad().Float64s()...)
		w.ZeroGrad()
		g.ZeroGrad()
		return v
	}
	want, got := run(dtype.Invalid), run(dtype.BF16)
	if d := autogradtest.MaxDiff(got, want); !(d <= 0.05*(1+autogradtest.MaxAbs(want))) {
		t.Errorf("bf16 autocast gradients differ from f32 by %.3g", d)
	}
}

// TestF64InputToF32ModelFailsAtFirstOp feeds an F64 batch to an F32
// model: the first op fails naming itself, both dtypes, the input's
// creator and the weight, and nothing of the forward is allocated.
func TestF64InputToF32ModelFailsAtFirstOp(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	b := nn.NewBuilder(dev, dtype.F32, 1)
	m := nn.NewSequential(nn.NewLinear(b, "fc1", 4, 8, true), nn.ReLU("relu"), nn.NewLinear(b, "fc2", 8, 2, true))
	defer nn.Release(m)
	s := autograd.NewScope()
	err := s.Run(func() error {
		x := s.FromFloat64s(dev, []int{3, 4}, make([]float64, 12))
		held := dev.CurrentBytes()
		defer func() {
			if dev.CurrentBytes() != held {
				t.Errorf("%d bytes live after the failed forward, %d before it", dev.CurrentBytes(), held)
			}
		}()
		m.Forward(x)
		return nil
	})
	var e *autograd.Error
	if !errors.As(err, &e) {
		t.Fatalf("F64 input to an F32 model: error %v, want *autograd.Error", err)
	}
	t.Logf("%v", e)
	for _, want := range []string{"f64", "f32", "made by input", "fc1.weight"} {
		if e.Op != "linear" || !strings.Contains(e.Msg, want) {
			t.Errorf("error %q: want op linear and %q in the message", e, want)
		}
	}
}
