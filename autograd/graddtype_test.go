package autograd_test

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestSetGradDTypeAccumulatesWide runs ten backwards of 0.1·w for a
// BF16 leaf w: each contribution is 0.1 rounded to BF16. With an F32
// gradient dtype the gradient is F32 and holds their sum added in F32;
// the default BF16 gradient rounds after each addition and ends elsewhere.
func TestSetGradDTypeAccumulatesWide(t *testing.T) {
	bf16 := func(x float32) float32 { return dtype.BF16ToF32(dtype.BF16FromF32(x)) }
	dev := cpu.New(0, device.Options{})
	run := func(wide bool) *autograd.Tensor {
		w := autograd.Param(dev, dtype.BF16, "w", 1)
		w.SetFloat64s([]float64{1})
		if wide {
			w.SetGradDType(dtype.F32)
		}
		for range 10 {
			s := autograd.NewScope()
			if err := s.Use(w).Scale(0.1).Cast(dtype.F32).Sum(false).Backward(); err != nil {
				t.Fatal(err)
			}
			s.Release()
		}
		return w
	}
	c := bf16(0.1)
	var sum32, sum16 float32
	for range 10 {
		sum32, sum16 = sum32+c, bf16(sum16+c)
	}
	wide, narrow := run(true), run(false)
	defer wide.Release()
	defer narrow.Release()
	if g := wide.Grad(); g.DType() != dtype.F32 || float32(g.Float64s()[0]) != sum32 {
		t.Fatalf("f32 gradient %v %s, want %v f32 (ten %v added in f32)", g.Float64s(), g.DType(), sum32, c)
	}
	if g := narrow.Grad(); g.DType() != dtype.BF16 || float32(g.Float64s()[0]) != sum16 {
		t.Fatalf("bf16 gradient %v %s, want %v bf16", g.Float64s(), g.DType(), sum16)
	}
	if sum16 == sum32 {
		t.Fatalf("the case does not tell the accumulations apart: both give %v", sum32)
	}
	t.Logf("ten contributions of %v: f32 gradient %v, bf16 gradient %v", c, sum32, sum16)
	if b := dev.Stats().ByTag[device.Gradient].Current; b != 4+2 {
		t.Errorf("gradient bytes %d, want 6 (one f32, one bf16)", b)
	}
}

// TestSetGradDTypeRefuses: a narrower or 16-bit gradient dtype of
// another kind, a non-leaf, a leaf holding a gradient of another dtype,
// and SetGrad of a tensor in the leaf's own dtype once its gradient dtype
// is F32 are refused, naming the operation.
func TestSetGradDTypeRefuses(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F32, "w", 2)
	h := autograd.Param(dev, dtype.BF16, "h", 2)
	s := autograd.NewScope()
	y := s.Use(w).Scale(2)
	for name, f := range map[string]func(){
		"narrower":      func() { w.SetGradDType(dtype.BF16) },
		"other 16-bit":  func() { h.SetGradDType(dtype.F16) },
		"integer":       func() { h.SetGradDType(dtype.I32) },
		"not a leaf":    func() { y.SetGradDType(dtype.F64) },
		"own dtype set": func() { h.SetGradDType(dtype.F32); h.SetGrad(autograd.New(dev, dtype.BF16, device.Gradient, 2)) },
	} {
		if err := autograd.Try(f); err == nil || !strings.Contains(err.Error(), "set_grad") {
			t.Errorf("%s: err = %v, want an error naming set_grad_dtype or set_grad", name, err)
		}
	}
	h.SetGradDType(dtype.Invalid)
	h.SetGrad(autograd.New(dev, dtype.BF16, device.Gradient, 2))
	if err := autograd.Try(func() { h.SetGradDType(dtype.F32) }); err == nil || !strings.Contains(err.Error(), "ZeroGrad") {
		t.Errorf("a bf16 gradient held: err = %v, want one saying ZeroGrad", err)
	}
	s.Release()
	w.Release()
	h.Release()
}
