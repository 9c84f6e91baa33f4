package train_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cuda"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// The single-device techniques — checkpointing (⌈√n⌉ segments, N
// segments, a byte budget), gradient accumulation, autocast under
// checkpointing, pruning and the memory alert — on the emulated cuda
// device, each checked against the cpu device (losses and every final
// parameter and optimizer state) and the meta device (the whole of
// device.Stats after every step, once cuda's cuBLAS workspace is added).

// TestMain builds the emulator and loads its driver before any test runs:
// the driver is loaded once per process, so a test that points
// HEADROOM_LIBCUDA at a missing library (TestOpenDeviceNoCUDA, which then
// sees cuda:1 refused as absent instead) must not be the first to load it.
func TestMain(m *testing.M) {
	if err := cudatest.Setup(0, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if _, err := cuda.Available(); err != nil {
		fmt.Fprintln(os.Stderr, "the emulated cuda device:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// Tolerances relative to the largest |value| of each cpu tensor (a loss:
// its own |value|). F32 on the emulator: the runs of TestTechniquesOnCUDA
// agree to at most 2.3e-6 (see its log: resnet accum 2), so 1e-5 leaves
// 4×. On a real GPU (cudatest.Real) cuBLAS and the tree reductions sum in
// other orders than the cpu's loops, ~1e-7 relative per op over a few
// dozen ops a step, and Adam's m/√v turns a gradient difference δ into an
// update difference of about lr·δ/|g|: 1e-4 there, device/cuda's a
// priori bound, until gpu-check measures. BF16 (autocast): one BF16 ulp
// (2⁻⁸) that a rounding puts differently, 2e-2, as device/cuda's train
// tests.
var cudaTolF32 = map[bool]float64{false: 1e-5, true: 1e-4}[cudatest.Real()]

const cudaTolBF16 = 2e-2

// cudaSteps is the number of optimizer steps of each run.
const cudaSteps = 3

// openCUDA0 opens cuda:0 (the emulated one but under
// HEADROOM_CUDA_REAL=1) for newRig; rig.release
// closes it and panics if Close reports a leak.
func openCUDA0(o device.Options) (*device.Device, error) { return cuda.Open(0, o) }

// runner makes a fresh block runner for one run (a Budget measures its
// own run) and returns the budget when it is one; nil: plain blocks.
type runner func() (func([]nn.Layer, *autograd.Tensor) *autograd.Tensor, *checkpoint.Budget)

func segments(n int) runner {
	return func() (func([]nn.Layer, *autograd.Tensor) *autograd.Tensor, *checkpoint.Budget) {
		return func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.Sequential(ls, n, x) }, nil
	}
}

func budget(bytes int64) runner {
	return func() (func([]nn.Layer, *autograd.Tensor) *autograd.Tensor, *checkpoint.Budget) {
		b := checkpoint.NewBudget(bytes)
		return b.Forward, b
	}
}

// technique is one run of TestTechniquesOnCUDA.
type technique struct {
	name   string
	c      setup  // model, accumulation, autocast
	blocks runner // nil: plain
	tol    float64
}

func techniques() []technique {
	gpt, resnet := setup{model: "gpt"}, setup{model: "resnet"}
	with := func(s setup, f func(*setup)) setup { f(&s); return s }
	accum := func(k int) func(*setup) { return func(s *setup) { s.accum = k } }
	bf16 := func(s *setup) { s.autocast = dtype.BF16 }
	return []technique{
		{"gpt plain", gpt, nil, cudaTolF32},
		{"gpt checkpoint sqrt", gpt, segments(0), cudaTolF32},
		{"gpt checkpoint budget", gpt, budget(24 << 10), cudaTolF32},
		{"gpt accum 4", with(gpt, accum(4)), nil, cudaTolF32},
		{"gpt accum 4 checkpoint 2", with(gpt, accum(4)), segments(2), cudaTolF32},
		{"gpt autocast bf16", with(gpt, bf16), nil, cudaTolBF16},
		{"gpt autocast bf16 checkpoint sqrt", with(gpt, bf16), segments(0), cudaTolBF16},
		{"resnet plain", resnet, nil, cudaTolF32},
		{"resnet checkpoint sqrt", resnet, segments(0), cudaTolF32},
		{"resnet checkpoint 3", resnet, segments(3), cudaTolF32},
		{"resnet checkpoint budget", resnet, budget(28 << 10), cudaTolF32},
		{"resnet accum 2", with(resnet, accum(2)), nil, cudaTolF32},
	}
}

// build makes tc's rig on a device (open nil: meta, or cpu with onCPU)
// with its block runner.
func (tc technique) build(t *testing.T, open func(device.Options) (*device.Device, error), onCPU bool) (*rig, *checkpoint.Budget) {
	t.Helper()
	c := tc.c
	c.open, c.onCPU = open, onCPU
	r := newRig(t, c)
	t.Cleanup(r.release)
	if tc.blocks == nil {
		return r, nil
	}
	run, b := tc.blocks()
	switch m := r.model.(type) {
	case *nn.GPT:
		m.RunBlocks = run
	case *nn.ResNet:
		m.RunBlocks = run
	}
	return r, b
}

// trio is one technique's rig on cpu, on cuda and on meta.
type trio struct {
	cpu, cuda, meta *rig
	budgets         [3]*checkpoint.Budget // in that order
	ws              int64                 // cuda's cuBLAS workspace bytes
}

func newTrio(t *testing.T, tc technique) *trio {
	t.Helper()
	var tr trio
	tr.cpu, tr.budgets[0] = tc.build(t, nil, true)
	tr.cuda, tr.budgets[1] = tc.build(t, openCUDA0, false)
	tr.meta, tr.budgets[2] = tc.build(t, nil, false)
	tr.ws = cudatest.Workspace(t, tr.cuda.dev)
	return &tr
}

// step runs one step on each device: the losses of cpu and cuda agree
// within tol and cuda's Stats are meta's plus the workspace.
func (tr *trio) step(t *testing.T, tol float64) {
	t.Helper()
	i := tr.cuda.st.Steps()
	lc, lg := tr.cpu.step(t), tr.cuda.step(t)
	tr.meta.step(t)
	if d := math.Abs(lc - lg); d > tol*math.Abs(lc) || math.IsNaN(lg) {
		t.Errorf("step %d: loss %.8g on cuda, %.8g on cpu (|Δ| %.3g > %g relative)", i, lg, lc, d, tol)
	}
	cudatest.SameStats(t, fmt.Sprintf("after step %d", i), tr.meta.dev.Stats(), tr.cuda.dev.Stats(), tr.ws)
}

// TestTechniquesOnCUDA runs each technique for cudaSteps steps on the
// emulated cuda device, on cpu and on meta from the same seeds and data:
// each step's loss and, at the end, every parameter and optimizer state
// agree with cpu's; after every step cuda's Stats equal meta's plus the
// cuBLAS workspace (checkpointing's recomputations and a budget's
// measuring step included); a budget plans the same segments on all
// three; checkpointing lowers cuda's activation peak below the plain
// run's, and under it a run trains as the plain run of the same model on
// cuda (the recomputation replays dropout's masks: the GPT's dropout is
// 0.1) and the bf16 run recomputes under autocast (or checkpoint's check
// of the saved dtypes fails it).
func TestTechniquesOnCUDA(t *testing.T) {
	peaks := map[string]int64{}
	final := map[string]map[string][]float64{}
	for _, tc := range techniques() {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTrio(t, tc)
			cudatest.SameStats(t, "after building", tr.meta.dev.Stats(), tr.cuda.dev.Stats(), tr.ws)
			for range cudaSteps {
				tr.step(t, tc.tol)
			}
			got := tr.cuda.values()
			worst := closeValues(t, "after training", tr.cpu.values(), got, tc.tol)
			if b := tr.budgets; b[0] != nil {
				samePlans(t, b)
			}
			peaks[tc.name] = tr.cuda.dev.Stats().ByTag[device.Activation].Peak
			final[tc.name] = got
			t.Logf("worst |Δ|/max|cpu| %.3g; cuda's activation peak %d B", worst, peaks[tc.name])
		})
	}
	for _, tc := range techniques() {
		if tc.blocks == nil {
			continue
		}
		plain := plainOf(tc)
		if peaks[tc.name] == 0 || peaks[plain] == 0 {
			continue // a subtest failed or was not run
		}
		if peaks[tc.name] >= peaks[plain] {
			t.Errorf("%s: cuda's activation peak %d B, not below %s's %d B", tc.name, peaks[tc.name], plain, peaks[plain])
		}
		closeValues(t, tc.name+" against "+plain+", both on cuda", final[plain], final[tc.name], tc.tol)
	}
}

// plainOf names the technique that runs tc's setup without checkpointing.
func plainOf(tc technique) string {
	for _, p := range techniques() {
		if p.blocks == nil && p.c.model == tc.c.model && p.c.accum == tc.c.accum && p.c.autocast == tc.c.autocast {
			return p.name
		}
	}
	panic("no plain run for " + tc.name)
}

// samePlans checks that the budgets of the cpu, cuda and meta runs chose
// the same segments with the same estimate.
func samePlans(t *testing.T, b [3]*checkpoint.Budget) {
	t.Helper()
	s0, e0, f0 := b[0].Plan()
	for i, name := range []string{"cpu", "cuda", "meta"} {
		s, e, f := b[i].Plan()
		if fmt.Sprint(s) != fmt.Sprint(s0) || e != e0 || f != f0 {
			t.Errorf("budget on %s: %v, want cpu's %v", name, b[i], b[0])
		}
	}
	if s0 == nil {
		t.Errorf("budget on cpu made no plan after %d steps", cudaSteps)
	}
	t.Logf("%v", b[1])
}

// values returns every parameter and optimizer state tensor by name, on
// the host.
func (r *rig) values() map[string][]float64 {
	v := map[string][]float64{}
	for _, p := range r.model.Params() {
		v["param "+p.Name] = p.T.Float64s()
	}
	for name, t := range r.opt.State().Tensors {
		v["state "+name] = t.Float64s()
	}
	return v
}

// keyBias reports the key part of an attention's qkv bias (features
// [C, 2C) of c_attn.bias, of n = 3C features): adding a vector to
// every key adds the same q·b to all the scores of a query, which softmax
// ignores, so its true gradient is zero and each device's Adam turns its
// own rounding noise into steps of either sign, about lr each.
func keyBias(name string, i, n int) bool {
	return strings.HasSuffix(name, "attn.c_attn.bias") && i >= n/3 && i < 2*n/3
}

// noiseBound bounds how far two devices may part on a keyBias element:
// two steps of at most the peak learning rate (the rig's 0.01) a step.
const noiseBound = 2 * 0.01 * cudaSteps

// closeValues checks every tensor of got against want within tol times
// the largest |element| of the want tensor (keyBias elements within
// noiseBound) and returns the worst ratio of the others.
func closeValues(t *testing.T, when string, want, got map[string][]float64, tol float64) float64 {
	t.Helper()
	return cudatest.CloseValues(t, when, want, got, tol, keyBias, noiseBound)
}

// TestFailedStepOnCUDA fails checkpointed and accumulating steps on cuda
// at allocations spread over them (device.InjectOOM), the recomputations
// in backward and a budget's measuring step among them: each failure
// returns the injected *device.OOMError and leaves the device holding
// what it held (the same live blocks by tag and creator, the same bytes)
// and every parameter, buffer, optimizer tensor, the generator, the data
// cursor and the step counter bit for bit as they were; the step then
// succeeds and computes what a twin that never failed computed (within
// cudaTolF32: a real GPU need not repeat its sums bit for bit). A
// budget's sweep starts after its measuring step: a failure late in that
// step (after the backward that measured every layer) leaves the
// measurement in place, and the retry runs the plan — the same values in
// other allocations than the twin's.
func TestFailedStepOnCUDA(t *testing.T) {
	for _, tc := range []struct {
		technique
		first int // the first step swept
	}{
		{technique{"gpt accum 2 checkpoint sqrt", setup{model: "gpt", accum: 2}, segments(0), cudaTolF32}, 0},
		{technique{"gpt checkpoint budget", setup{model: "gpt"}, budget(24 << 10), cudaTolF32}, 1},
		{technique{"resnet accum 2 checkpoint 3", setup{model: "resnet", accum: 2}, segments(3), cudaTolF32}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			twin, _ := tc.build(t, openCUDA0, false)
			r, _ := tc.build(t, openCUDA0, false)
			for step := range 2 { // the first (optimizer state made, a budget measures), then a steady one
				a0 := twin.dev.Stats().Requested.Allocs
				want := twin.step(t)
				n := int(twin.dev.Stats().Requested.Allocs - a0)
				if step < tc.first {
					r.step(t)
					continue
				}
				mem, st := memoryOf(r.dev), r.state()
				for _, k := range []int{1, n / 3, 2 * n / 3, n} {
					r.dev.InjectOOM(k)
					_, _, err := r.st.Step(r.fwd)
					r.dev.InjectOOM(0)
					var oom *device.OOMError
					if !errors.As(err, &oom) || !errors.Is(err, device.ErrInjected) {
						t.Fatalf("step %d failing at allocation %d of %d: %v, want the injected *device.OOMError", step, k, n, err)
					}
					if d := mem.diff(memoryOf(r.dev)); d != "" {
						t.Errorf("step %d, failed at allocation %d of %d (%s): the device holds %s", step, k, n, oom.Label.Creator(), d)
					}
					if d := stateDiff(st, r.state()); len(d) > 0 {
						t.Errorf("step %d, failed at allocation %d of %d (%s): changed %v", step, k, n, oom.Label.Creator(), d)
					}
				}
				if got := r.step(t); math.Abs(got-want) > cudaTolF32*math.Abs(want) {
					t.Errorf("step %d retried: loss %.8g, the twin's %.8g", step, got, want)
				}
			}
			closeValues(t, "retried steps against the twin", twin.values(), r.values(), cudaTolF32)
		})
	}
}
