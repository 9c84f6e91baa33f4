package autograd_test

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
)

// mlp is Linear(D,H) → ReLU → Linear(H,C) → cross-entropy, written with
// autograd's ops only.
type mlp struct {
	w1, b1, w2, b2 *autograd.Tensor
}

func newMLP(dev *device.Device, d, h, c int, seed uint64) *mlp {
	rng := rand.New(rand.NewPCG(seed, 1))
	p := func(name string, fan int, shape ...int) *autograd.Tensor {
		t := autograd.Param(dev, dtype.F32, name, shape...)
		if dev.Kernels() != nil {
			v := make([]float32, t.Len())
			bound := 1 / math.Sqrt(float64(fan))
			for i := range v {
				v[i] = float32((2*rng.Float64() - 1) * bound)
			}
			t.SetFloat32s(v)
		}
		return t
	}
	return &mlp{w1: p("w1", d, h, d), b1: p("b1", d, h), w2: p("w2", h, c, h), b2: p("b2", h, c)}
}

func (m *mlp) params() []*autograd.Tensor { return []*autograd.Tensor{m.w1, m.b1, m.w2, m.b2} }

func (m *mlp) release() {
	for _, p := range m.params() {
		p.Release()
	}
}

// step runs one SGD step on a batch and returns the loss. It releases the
// one intermediate nobody saves (the first linear's output) as soon as the
// ReLU has consumed it.
func (m *mlp) step(s *autograd.Scope, dev *device.Device, x []float32, y []int64, b, d int, lr float64) float64 {
	xs := s.FromFloat32s(dev, []int{b, d}, x)
	ys := s.FromInt64s(dev, []int{b}, y)
	h := autograd.Linear(xs, m.w1, m.b1)
	r := h.ReLU()
	h.Release()
	logits := autograd.Linear(r, m.w2, m.b2)
	loss := autograd.CrossEntropy(logits, ys, autograd.CEOptions{})
	if err := loss.Backward(); err != nil {
		panic(err)
	}
	v := loss.Item()
	s.Release()
	for _, p := range m.params() {
		p.AddInPlace(p.Grad(), -lr)
		p.ZeroGrad()
	}
	return v
}

// batch returns a seeded synthetic classification batch: the class is the
// index of the largest of the first c features.
func batch(rng *rand.Rand, b, d, c int) ([]float32, []int64) {
	x := make([]float32, b*d)
	y := make([]int64, b)
	for i := range b {
		best := 0
		for j := range d {
			x[i*d+j] = float32(rng.NormFloat64())
			if j < c && x[i*d+j] > x[i*d+best] {
				best = j
			}
		}
		y[i] = int64(best)
	}
	return x, y
}

// TestActivationPeakClosedForm checks the exact activation bytes of one
// Linear→ReLU→Linear→cross-entropy step against what each op saves, on cpu
// and on meta, and that meta's whole accounting equals cpu's.
func TestActivationPeakClosedForm(t *testing.T) {
	const B, D, H, C = 32, 20, 64, 10
	const f32, i64 = 4, 8
	// Tagged activation, in order of allocation:
	//   x (B,D) f32 input      — saved by linear1 (for ∂W1)
	//   y (B)   i64 targets    — saved by cross-entropy
	//   h (B,H) f32 linear1    — saved by nobody (ReLU saves its output); released after ReLU
	//   r (B,H) f32 relu       — saved by ReLU (its mask) and linear2 (for ∂W2)
	//   logits (B,C) f32       — saved by cross-entropy
	//   lse (B) f32            — saved by cross-entropy
	//   loss () f32            — the step's output
	// (cross-entropy's per-row losses (B) are workspace, freed at once.)
	peakAtReLU := int64(B*D*f32 + B*i64 + 2*B*H*f32)
	endOfForward := int64(B*D*f32 + B*i64 + B*H*f32 + B*C*f32 + B*f32 + f32)
	wantPeak := max(peakAtReLU, endOfForward)

	run := func(dev *device.Device) device.Stats {
		m := newMLP(dev, D, H, C, 1)
		defer m.release()
		x, y := batch(rand.New(rand.NewPCG(2, 2)), B, D, C)
		dev.ResetPeak()
		s := autograd.NewScope()
		xs := s.FromFloat32s(dev, []int{B, D}, x)
		ys := s.FromInt64s(dev, []int{B}, y)
		h := autograd.Linear(xs, m.w1, m.b1)
		r := h.ReLU()
		h.Release()
		logits := autograd.Linear(r, m.w2, m.b2)
		loss := autograd.CrossEntropy(logits, ys, autograd.CEOptions{})
		if got := dev.Stats().ByTag[device.Activation].Current; got != endOfForward {
			t.Errorf("%s: activation bytes at the end of forward = %d, want %d", dev.Kind(), got, endOfForward)
		}
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		s.Release()
		return dev.Stats()
	}
	c := run(cpu.New(0, device.Options{}))
	mt := run(meta.New(0, device.Options{}))
	for _, st := range []device.Stats{c, mt} {
		if got := st.ByTag[device.Activation].Peak; got != wantPeak {
			t.Errorf("%s: activation peak = %d bytes, want %d", st.Device, got, wantPeak)
		}
	}
	c.Device, mt.Device = "", ""
	if c != mt {
		t.Errorf("meta accounting differs from cpu:\ncpu  %+v\nmeta %+v", c, mt)
	}
	if c.Requested.Peak != mt.Requested.Peak {
		t.Errorf("peak: cpu %d, meta %d", c.Requested.Peak, mt.Requested.Peak)
	}
}

// TestSteadyState trains 50 steps and checks after every step that the
// device holds exactly the parameters — no leak, no garbage collection.
func TestSteadyState(t *testing.T) {
	const B, D, H, C = 16, 12, 32, 4
	dev := cpu.New(0, device.Options{})
	m := newMLP(dev, D, H, C, 3)
	defer m.release()
	paramBytes := int64((H*D + H + C*H + C) * 4)
	rng := rand.New(rand.NewPCG(4, 4))
	s := autograd.NewScope()
	var first, last float64
	var base device.Stats
	for i := range 50 {
		x, y := batch(rng, B, D, C)
		loss := m.step(s, dev, x, y, B, D, 0.1)
		if i == 0 {
			first = loss
		}
		last = loss
		st := dev.Stats()
		if st.Requested.Current != paramBytes {
			t.Fatalf("step %d: %d bytes live, want %d (the parameters)", i, st.Requested.Current, paramBytes)
		}
		if leaks := dev.Leaks(device.Parameter); len(leaks) != 0 {
			t.Fatalf("step %d: leak %v", i, leaks)
		}
		if i == 1 {
			base = st
		}
		if i > 1 && (st.Reserved.Current != base.Reserved.Current || st.Segments != base.Segments) {
			t.Fatalf("step %d: reserved %d in %d segments, step 1 had %d in %d: the cache is not reused",
				i, st.Reserved.Current, st.Segments, base.Reserved.Current, base.Segments)
		}
	}
	if !(last < first) {
		t.Errorf("loss did not fall: %v → %v", first, last)
	}
	t.Logf("loss %.4f → %.4f", first, last)
}

func trainCurve(dev *device.Device, seed uint64, steps int) []float64 {
	const B, D, H, C = 16, 12, 32, 4
	m := newMLP(dev, D, H, C, seed)
	defer m.release()
	rng := rand.New(rand.NewPCG(seed, 9))
	s := autograd.NewScope()
	curve := make([]float64, steps)
	for i := range curve {
		x, y := batch(rng, B, D, C)
		curve[i] = m.step(s, dev, x, y, B, D, 0.05)
	}
	return curve
}

// TestTwoModelsInTwoGoroutines trains two models at once on one device and
// compares with training them one after the other (run it with -race).
func TestTwoModelsInTwoGoroutines(t *testing.T) {
	const steps = 20
	seq := cpu.New(0, device.Options{})
	want := [2][]float64{trainCurve(seq, 10, steps), trainCurve(seq, 11, steps)}

	shared := cpu.New(1, device.Options{})
	var got [2][]float64
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = trainCurve(shared, uint64(10+i), steps)
		}()
	}
	wg.Wait()
	for i := range 2 {
		for j := range steps {
			if got[i][j] != want[i][j] {
				t.Fatalf("model %d step %d: concurrent loss %v, sequential %v", i, j, got[i][j], want[i][j])
			}
		}
	}
	if shared.LiveBlocks() != 0 {
		t.Errorf("leak: %v", shared.Live())
	}
}

// BenchmarkMLPStep measures one training step of a 784-256-10 MLP at batch
// 64 (forward, backward, SGD update).
func BenchmarkMLPStep(b *testing.B) {
	const B, D, H, C = 64, 784, 256, 10
	dev := cpu.New(0, device.Options{})
	m := newMLP(dev, D, H, C, 1)
	defer m.release()
	x, y := batch(rand.New(rand.NewPCG(1, 1)), B, D, C)
	s := autograd.NewScope()
	b.ReportAllocs()
	for b.Loop() {
		m.step(s, dev, x, y, B, D, 0.01)
	}
	b.ReportMetric(float64(dev.PeakBytes()), "peak-bytes")
}
