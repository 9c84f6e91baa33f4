package cuda_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// Mixed precision on the emulated cuda device, against the cpu device:
// 16-bit parameters with F32 master weights (the examples' --amp-params),
// F16 autocast with the dynamic loss scaler, and clipping. The recipes
// below join TestTrainMatchesCPU, TestTrainAccountingMatchesMeta and
// TestTrainFailedStep through recipes().

// ampRecipes are the mixed-precision training recipes: the MLP with BF16
// and F16 parameters and F32 masters under AdamW (clipped to norm 1, so
// that the global norm's reduction runs on cuda) and SGD with momentum,
// and the MLP in F32 under F16 autocast with the loss scaler. A failed
// step is tried on the two that scale their losses (F16 parameters with
// AdamW, autocast), which put the Scaler back too.
func ampRecipes() []recipe {
	masterAdamW := func(ps []nn.Param) (optim.Optimizer, error) {
		return optim.NewAdamW(ps, optim.AdamConfig{LR: adamLR, Beta2: 0.99, WeightDecay: 0.1, MasterWeights: true})
	}
	masterSGD := func(ps []nn.Param) (optim.Optimizer, error) {
		return optim.NewSGD(ps, optim.SGDConfig{LR: 0.05, Momentum: 0.9, MasterWeights: true})
	}
	return []recipe{
		{"mlp-adamw-bf16-params", dtype.Invalid, tolBF16, mlpRunIn(dtype.BF16, masterAdamW, 1), nil, true},
		{"mlp-adamw-f16-params", dtype.Invalid, tolF16, mlpRunIn(dtype.F16, masterAdamW, 1), nil, false},
		{"mlp-sgd-bf16-params", dtype.Invalid, tolBF16, mlpRunIn(dtype.BF16, masterSGD, 0), nil, true},
		{"mlp-sgd-f16-params", dtype.Invalid, tolF16, mlpRunIn(dtype.F16, masterSGD, 0), nil, true},
		{"mlp-adamw-f16-autocast-scaler", dtype.F16, tolF16, mlpScaledRun(amp.ScalerConfig{}), nil, false},
	}
}

// tolF16 is tolBF16's argument for F16's 11 significant bits (2⁻¹¹ ≈
// 5e-4 a rounding): 4e-3, an a priori bound for a real GPU; the emulated
// runs agree exactly.
const tolF16 = 4e-3

// mlpScaledRun is mlpRun(adamw) with a Scaler made with c.
func mlpScaledRun(c amp.ScalerConfig) func(*testing.T, *device.Device, dtype.DType) *run {
	return func(t *testing.T, dev *device.Device, ac dtype.DType) *run {
		r := mlpRun(adamw)(t, dev, ac)
		r.st.Scaler = amp.NewScaler(dtype.F16, c)
		return r
	}
}

// TestScalerOverflowMatchesCPU trains the F16-autocast MLP with the loss
// scaler on cuda and on cpu: two clean steps, then a step whose loss scale
// (1e30, loaded into both Scalers) overflows the F16 gradients. Both skip
// it, leaving every parameter and optimizer state bit for bit as it was,
// back the scale off to 5e29 and blame the same parameter; with a normal
// scale loaded again, the next step runs on both and they still agree.
func TestScalerOverflowMatchesCPU(t *testing.T) {
	gd := openCuda(t)
	build := mlpScaledRun(amp.ScalerConfig{})
	c, g := build(t, cpu.New(0, device.Options{}), dtype.F16), build(t, gd, dtype.F16)
	defer c.release()
	defer g.release()
	for range 2 {
		lc, lg := c.step(t), g.step(t)
		if math.Abs(lc-lg) > tolF16*math.Abs(lc) {
			t.Fatalf("clean step: loss %.8g on cuda, %.8g on cpu", lg, lc)
		}
	}
	const huge = 1e30
	for _, r := range []*run{c, g} {
		before := r.values()
		st := r.st.Scaler.State()
		if err := r.st.Scaler.Load(amp.ScalerState{Scale: huge, GrowthTracker: st.GrowthTracker, Skipped: st.Skipped}); err != nil {
			t.Fatal(err)
		}
		_, stepped, err := r.st.Step(func(s *autograd.Scope, _ int) *autograd.Tensor { return r.forward(s, r.st.Steps()) })
		if err != nil || stepped {
			t.Fatalf("%s: the step with scale %g: stepped %v, %v; want it skipped", r.dev, huge, stepped, err)
		}
		compareValues(t, fmt.Sprintf("%s after the skipped step", r.dev), before, r.values(), 0, nil)
		if sc := r.st.Scaler; sc.Scale() != huge/2 || sc.Skipped() != 1 || sc.LastOverflow() == "" {
			t.Errorf("%s after the overflow: scale %g, skipped %d, overflow in %q; want %g, 1 and a parameter's name", r.dev, sc.Scale(), sc.Skipped(), sc.LastOverflow(), huge/2)
		}
	}
	if c.st.Scaler.LastOverflow() != g.st.Scaler.LastOverflow() {
		t.Errorf("overflow blamed on %q on cuda, %q on cpu", g.st.Scaler.LastOverflow(), c.st.Scaler.LastOverflow())
	}
	for _, r := range []*run{c, g} {
		if err := r.st.Scaler.Load(amp.ScalerState{Scale: 1 << 16, Skipped: 1}); err != nil {
			t.Fatal(err)
		}
	}
	lc, lg := c.step(t), g.step(t)
	if math.Abs(lc-lg) > tolF16*math.Abs(lc) {
		t.Errorf("step after the overflow: loss %.8g on cuda, %.8g on cpu", lg, lc)
	}
	compareValues(t, "after the step that follows the overflow", c.values(), g.values(), tolF16, nil)
}

// TestClipGradNormMatchesCPU clips gradients of F32, BF16 and F16
// parameters (one without a gradient) on cuda and on cpu: the same total
// norm (float64 sums, in another order: 1e-12) and the same clipped
// gradients (scaled in the gradients' dtype: one rounding).
func TestClipGradNormMatchesCPU(t *testing.T) {
	gd := openCuda(t)
	shapes := [][]int{{3, 5}, {7}, {2, 2, 3}, {4}}
	dts := []dtype.DType{dtype.F32, dtype.BF16, dtype.F16, dtype.F32}
	build := func(dev *device.Device) []nn.Param {
		var ps []nn.Param
		for i, sh := range shapes {
			p := autograd.Param(dev, dts[i], fmt.Sprintf("p%d", i), sh...)
			if i < 3 { // p3 has no gradient
				n := p.Len()
				v := make([]float64, n)
				for j := range v {
					v[j] = math.Sin(float64(7*i+j)) * float64(i+1)
				}
				gr := autograd.New(dev, dts[i], device.Gradient, sh...)
				gr.SetFloat64s(v)
				p.SetGrad(gr)
			}
			ps = append(ps, nn.Param{Name: p.Name(), T: p})
		}
		return ps
	}
	pc, pg := build(cpu.New(0, device.Options{})), build(gd)
	defer func() {
		for _, p := range append(pc, pg...) {
			p.T.Release()
		}
	}()
	nc, err := optim.ClipGradNorm(pc, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	ng, err := optim.ClipGradNorm(pg, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(nc-ng) > 1e-12*nc || nc <= 0.5 {
		t.Errorf("total norm %.17g on cuda, %.17g on cpu (want equal, above the limit 0.5)", ng, nc)
	}
	for i := range 3 {
		want, got := pc[i].T.Grad().Float64s(), pg[i].T.Grad().Float64s()
		for j := range want {
			if math.Abs(got[j]-want[j]) > 1e-6*math.Abs(want[j]) {
				t.Errorf("%s %s: clipped gradient[%d] = %v on cuda, %v on cpu", pc[i].Name, dts[i], j, got[j], want[j])
				break
			}
		}
	}
	if l := gd.Leaks(device.Parameter, device.Gradient); len(l) > 0 {
		t.Errorf("ClipGradNorm left %v on cuda", l)
	}
}
