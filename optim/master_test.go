package optim_test

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// gradStep gives p the gradient c (exact in bf16) through loss Σ p·c.
func gradStep(t *testing.T, p *autograd.Tensor, c []float64) {
	t.Helper()
	s := autograd.NewScope()
	defer s.Release()
	ct := s.FromFloat64s(p.Device(), []int{len(c)}, c).Cast(p.DType())
	if err := s.Use(p).Mul(ct).Sum(false).Backward(); err != nil {
		t.Fatal(err)
	}
}

// TestMasterWeightsUpdateLikeF32 trains a bf16 parameter with f32 master
// weights and an f32 parameter with the same values and gradients: the
// master copy must follow the f32 run exactly and the bf16 parameter must
// be its rounding.
func TestMasterWeightsUpdateLikeF32(t *testing.T) {
	init := []float64{0.5, -1.25, 3, 0.0078125}
	grads := [][]float64{{0.25, -0.5, 1, 2}, {-0.125, 0.75, -1, 0.5}, {1, 1, -2, -0.25}}
	for _, kind := range []string{"adamw", "sgd"} {
		dev := cpu.New(0, device.Options{})
		ref := cpu.New(1, device.Options{})
		p16 := autograd.Param(dev, dtype.BF16, "w", 4)
		p32 := autograd.Param(ref, dtype.F32, "w", 4)
		p16.SetFloat64s(init)
		p32.SetFloat64s(init)
		var o16, o32 optim.Optimizer
		var err error
		if kind == "adamw" {
			o16, err = optim.NewAdamW([]nn.Param{{Name: "w", T: p16}}, optim.AdamConfig{LR: 0.1, MasterWeights: true})
			if err == nil {
				o32, err = optim.NewAdamW([]nn.Param{{Name: "w", T: p32}}, optim.AdamConfig{LR: 0.1})
			}
		} else {
			o16, err = optim.NewSGD([]nn.Param{{Name: "w", T: p16}}, optim.SGDConfig{LR: 0.1, Momentum: 0.9, MasterWeights: true})
			if err == nil {
				o32, err = optim.NewSGD([]nn.Param{{Name: "w", T: p32}}, optim.SGDConfig{LR: 0.1, Momentum: 0.9})
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range grads {
			gradStep(t, p16, g)
			gradStep(t, p32, g)
			if err := o16.Step(); err != nil {
				t.Fatal(err)
			}
			if err := o32.Step(); err != nil {
				t.Fatal(err)
			}
			o16.ZeroGrad()
			o32.ZeroGrad()
		}
		master := o16.State().Tensors["master.w"].Float32s()
		want := p32.Float32s()
		got16 := p16.Float64s()
		for i := range want {
			if master[i] != want[i] {
				t.Errorf("%s: master[%d] = %v, f32 run %v", kind, i, master[i], want[i])
			}
			var b [2]byte
			dtype.FromF64(dtype.BF16, b[:], []float64{float64(want[i])})
			var r [1]float64
			dtype.ToF64(r[:], dtype.BF16, b[:])
			if got16[i] != r[0] {
				t.Errorf("%s: bf16 parameter[%d] = %v, want the rounding of the master weight %v", kind, i, got16[i], r[0])
			}
		}
		// Memory: 2 bytes of parameter per element, and the state in f32.
		wantState := int64(4 * (4 + 8)) // master + m + v
		if kind == "sgd" {
			wantState = 4 * (4 + 4) // master + momentum
		}
		if got := dev.Stats().ByTag[device.Optimizer].Current; got != wantState {
			t.Errorf("%s: optimizer bytes = %d, want %d", kind, got, wantState)
		}
		o16.Release()
		o32.Release()
		p16.Release()
		p32.Release()
		if dev.LiveBlocks() != 0 {
			t.Errorf("leak: %v", dev.Live())
		}
	}
}

// TestParameterDTypesCheckedAtConstruction: every optimizer refuses, when
// it is made (not at the first Step, after a whole forward and backward),
// parameters its kernels cannot update: 16-bit ones without master
// weights, F32 or F64 ones with them, integer ones.
func TestParameterDTypesCheckedAtConstruction(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	makers := map[string]func([]nn.Param, bool) error{
		"adam": func(ps []nn.Param, m bool) error {
			_, err := optim.NewAdam(ps, optim.AdamConfig{MasterWeights: m})
			return err
		},
		"adamw": func(ps []nn.Param, m bool) error {
			_, err := optim.NewAdamW(ps, optim.AdamConfig{MasterWeights: m})
			return err
		},
		"sgd": func(ps []nn.Param, m bool) error {
			_, err := optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, Momentum: 0.9, MasterWeights: m})
			return err
		},
		"sgd without momentum": func(ps []nn.Param, m bool) error {
			_, err := optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, MasterWeights: m})
			return err
		},
	}
	for _, c := range []struct {
		dt     dtype.DType
		master bool
		want   string // "" when the optimizer takes it
	}{
		{dtype.F32, false, ""},
		{dtype.F64, false, ""},
		{dtype.BF16, true, ""},
		{dtype.F16, true, ""},
		{dtype.BF16, false, `parameter "w" has dtype bf16: the optimizer updates f32 or f64 parameters; set MasterWeights`},
		{dtype.F16, false, `parameter "w" has dtype f16: the optimizer updates f32 or f64 parameters; set MasterWeights`},
		{dtype.F32, true, `parameter "w" has dtype f32: master weights are f32 copies of f16 or bf16 parameters`},
		{dtype.I64, false, `parameter "w" has dtype i64, want f32 or f64`},
	} {
		p := autograd.Param(dev, c.dt, "w", 2)
		for kind, mk := range makers {
			err := mk([]nn.Param{{Name: "w", T: p}}, c.master)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s over %s (master %v): %v", kind, c.dt, c.master, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), strings.Fields(kind)[0]+": ")):
				t.Errorf("%s over %s (master %v): error %v, want %q", kind, c.dt, c.master, err, c.want)
			}
		}
		p.Release()
	}
}
