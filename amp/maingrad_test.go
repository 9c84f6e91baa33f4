package amp_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// mlp is a 24→48→6 ReLU MLP in one dtype, with an AdamW over it (master
// weights for 16-bit parameters).
type mlp struct {
	dev      *device.Device
	dt       dtype.DType
	fc1, fc2 *nn.Linear
	opt      optim.Optimizer
}

// newMLP builds the MLP in dt with the values of from (nil: seed 3's
// initialisation), F32 main gradients when f32 and dt is 16-bit.
func newMLP(t *testing.T, dt dtype.DType, from *mlp, f32 bool) *mlp {
	t.Helper()
	dev := cpu.New(0, device.Options{})
	b := nn.NewBuilder(dev, dt, 3)
	m := &mlp{dev: dev, dt: dt, fc1: nn.NewLinear(b, "fc1", 24, 48, true), fc2: nn.NewLinear(b, "fc2", 48, 6, true)}
	if from != nil {
		for i, p := range m.params() {
			p.T.SetFloat64s(from.params()[i].T.Float64s())
		}
	}
	if f32 {
		n, err := amp.MainGradsF32(m.params())
		if err != nil || n != 4 {
			t.Fatalf("MainGradsF32: %d parameters, %v; want 4", n, err)
		}
	}
	var err error
	m.opt, err = optim.NewAdamW(m.params(), optim.AdamConfig{LR: 1e-2, MasterWeights: dt.IsLowPrecision()})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *mlp) params() []nn.Param { return append(m.fc1.Params(), m.fc2.Params()...) }

// backward adds the gradient of the mean cross-entropy over micro-batches
// xs (the loss of each scaled by 1/len(xs)), one backward per micro-batch,
// and returns the summed loss.
func (m *mlp) backward(t *testing.T, xs [][]float64, ys [][]int64) float64 {
	return m.backwardOver(t, xs, ys, len(xs))
}

// backwardOver is backward with each loss scaled by 1/div.
func (m *mlp) backwardOver(t *testing.T, xs [][]float64, ys [][]int64, div int) float64 {
	t.Helper()
	var total float64
	for i, x := range xs {
		s := autograd.NewScope()
		err := s.Run(func() error {
			in := s.FromFloat64s(m.dev, []int{len(ys[i]), 24}, x).Cast(m.dt)
			logits := m.fc2.Forward(m.fc1.Forward(in).ReLU()).Cast(dtype.F64)
			loss := autograd.CrossEntropy(logits, s.FromInt64s(m.dev, []int{len(ys[i])}, ys[i]), autograd.CEOptions{}).Scale(1 / float64(div))
			total += loss.Item()
			return loss.Backward()
		})
		s.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	return total
}

// grads returns every parameter's gradient, concatenated, in float64.
func (m *mlp) grads() []float64 {
	var g []float64
	for _, p := range m.params() {
		g = append(g, p.T.Grad().Float64s()...)
	}
	return g
}

// masters returns the optimizer's F32 masters (the parameters for F64).
func (m *mlp) masters() []float64 {
	var v []float64
	st := m.opt.State()
	for _, p := range m.params() {
		if t := st.Tensors["master."+p.Name]; t != nil {
			v = append(v, t.Float64s()...)
		} else {
			v = append(v, p.T.Float64s()...)
		}
	}
	return v
}

func (m *mlp) release() {
	m.opt.Release()
	nn.Release(m.fc1)
	nn.Release(m.fc2)
}

// batches draws n micro-batches of 4 rows.
func batches(r *rand.Rand, n int) ([][]float64, [][]int64) {
	xs, ys := make([][]float64, n), make([][]int64, n)
	for i := range xs {
		xs[i], ys[i] = make([]float64, 4*24), make([]int64, 4)
		for j := range xs[i] {
			xs[i][j] = r.NormFloat64()
		}
		for j := range ys[i] {
			ys[i][j] = r.Int64N(6)
		}
	}
	return xs, ys
}

// relErr is ‖a − ref‖ / ‖ref‖.
func relErr(a, ref []float64) float64 {
	var d, n float64
	for i := range ref {
		d += (a[i] - ref[i]) * (a[i] - ref[i])
		n += ref[i] * ref[i]
	}
	return math.Sqrt(d / n)
}

// TestMainGradsF32Accuracy trains BF16 parameters with F32 masters over
// 64 micro-batches a step, with BF16 gradients and with F32 main
// gradients, against the same model in F64 from the same (BF16-rounded)
// start. On the first step (the three models' parameters equal) the
// F32-accumulated gradient is closer to F64's; later steps are logged
// (the models have drifted apart by then, by the BF16 forward more than
// by the accumulation). Each micro-batch's contribution is the same BF16
// value in both 16-bit runs; only the accumulation differs.
func TestMainGradsF32Accuracy(t *testing.T) {
	start := newMLP(t, dtype.BF16, nil, false)
	ref, half, main := newMLP(t, dtype.F64, start, false), newMLP(t, dtype.BF16, start, false), newMLP(t, dtype.BF16, start, true)
	defer func() { start.release(); ref.release(); half.release(); main.release() }()
	r := rand.New(rand.NewPCG(1, 2))
	for step := range 3 {
		xs, ys := batches(r, 64)
		for _, m := range []*mlp{ref, half, main} {
			m.backward(t, xs, ys)
		}
		eh, em := relErr(half.grads(), ref.grads()), relErr(main.grads(), ref.grads())
		t.Logf("step %d: gradient error vs f64: bf16 accumulation %.3g, f32 main grads %.3g", step, eh, em)
		if step == 0 && !(em < eh) {
			t.Errorf("step %d: f32 main grads' gradient error %.3g, bf16's %.3g: want f32's smaller", step, em, eh)
		}
		for _, m := range []*mlp{ref, half, main} {
			if err := m.opt.Step(); err != nil {
				t.Fatal(err)
			}
			m.opt.ZeroGrad()
		}
	}
	// Logged, not asserted: after the update both round the masters into
	// BF16 parameters, whose forward error dominates.
	eh, em := relErr(half.masters(), ref.masters()), relErr(main.masters(), ref.masters())
	t.Logf("after 3 steps: master error vs f64: bf16 gradients %.3g, f32 main grads %.3g", eh, em)
}

// TestMainGradsF32Accumulation isolates the accumulation: 64 micro-batch
// contributions (each the BF16 gradient backward makes), summed in
// float64 by the test, against the same contributions accumulated by
// backward into BF16 and into F32 gradients. F32 holds the sum to F32's
// rounding (≤ 1e-6 relative), BF16 does not (its 8-bit significand loses
// the small addends: an error above 1e-3).
func TestMainGradsF32Accumulation(t *testing.T) {
	const n = 64
	probe := newMLP(t, dtype.BF16, nil, false)
	half, main := newMLP(t, dtype.BF16, probe, false), newMLP(t, dtype.BF16, probe, true)
	defer func() { probe.release(); half.release(); main.release() }()
	xs, ys := batches(rand.New(rand.NewPCG(3, 4)), n)
	var sum []float64
	for i := range xs {
		probe.backwardOver(t, xs[i:i+1], ys[i:i+1], n)
		g := probe.grads()
		if sum == nil {
			sum = make([]float64, len(g))
		}
		for j, v := range g {
			sum[j] += v
		}
		probe.opt.ZeroGrad()
	}
	half.backward(t, xs, ys)
	main.backward(t, xs, ys)
	eh, em := relErr(half.grads(), sum), relErr(main.grads(), sum)
	t.Logf("%d micro-batches: accumulation error vs the float64 sum of the contributions: bf16 %.3g, f32 main grads %.3g", n, eh, em)
	if em > 1e-6 || eh < 1e-3 {
		t.Errorf("accumulation error: f32 %.3g (want ≤ 1e-6), bf16 %.3g (want ≥ 1e-3)", em, eh)
	}
}

// TestMainGradsF32SameArithmetic: with one micro-batch a step every
// parameter's gradient is one BF16 contribution, which the F32 main
// gradient holds exactly; the master update reads the same values, so
// losses, gradients and parameters are bit for bit those of BF16
// gradients, for 5 steps. The gradient bytes are 4 per parameter, not 2.
func TestMainGradsF32SameArithmetic(t *testing.T) {
	half := newMLP(t, dtype.BF16, nil, false)
	main := newMLP(t, dtype.BF16, half, true)
	defer func() { half.release(); main.release() }()
	r := rand.New(rand.NewPCG(5, 6))
	for step := range 5 {
		xs, ys := batches(r, 1)
		lh, lm := half.backward(t, xs, ys), main.backward(t, xs, ys)
		gh, gm := half.grads(), main.grads()
		if gb, n := main.dev.Stats().ByTag[device.Gradient].Current, int64(len(gm)); gb != 4*n || half.dev.Stats().ByTag[device.Gradient].Current != 2*n {
			t.Fatalf("step %d: gradient bytes %d (f32 main grads), %d (bf16): want 4 and 2 per parameter of %d", step, gb, half.dev.Stats().ByTag[device.Gradient].Current, n)
		}
		for i := range gh {
			if gh[i] != gm[i] {
				t.Fatalf("step %d: gradient element %d: bf16 %v, f32 main grad %v: want equal", step, i, gh[i], gm[i])
			}
		}
		if lh != lm {
			t.Fatalf("step %d: loss %v (bf16 gradients), %v (f32 main grads): want equal", step, lh, lm)
		}
		for _, m := range []*mlp{half, main} {
			if err := m.opt.Step(); err != nil {
				t.Fatal(err)
			}
			m.opt.ZeroGrad()
		}
	}
	ph, pm := half.masters(), main.masters()
	for i := range ph {
		if ph[i] != pm[i] {
			t.Fatalf("master element %d: %v and %v after 5 steps: want equal", i, ph[i], pm[i])
		}
	}
}

// TestMainGradsF32Refuses: a parameter holding a BF16 gradient is
// refused (SetGradDType cannot change a live gradient's dtype), and F32
// parameters are left alone.
func TestMainGradsF32Refuses(t *testing.T) {
	m := newMLP(t, dtype.BF16, nil, false)
	defer m.release()
	r := rand.New(rand.NewPCG(1, 1))
	xs, ys := batches(r, 1)
	m.backward(t, xs, ys)
	if _, err := amp.MainGradsF32(m.params()); err == nil {
		t.Fatal("MainGradsF32 over bf16 gradients: no error")
	}
	f := newMLP(t, dtype.F32, nil, false)
	defer f.release()
	if n, err := amp.MainGradsF32(f.params()); n != 0 || err != nil {
		t.Fatalf("f32 parameters: %d changed, %v; want 0, nil", n, err)
	}
}
