package parallel_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// pipeSetup is a pipeline test's model and batches.
type pipeSetup struct {
	cfg           nn.GPTConfig
	dt            dtype.DType
	batch, seq, m int // micro-batch shape and count
	steps         int
	stages        int
	sched         parallel.Schedule
	capOf         func(rank int) int64             // device capacity per rank (0: none)
	failAt        func(rank, step, micro int) bool // the Loss returns nil there
	adam          optim.AdamConfig
	clip          float64                                           // the global gradient-norm limit (0: none)
	split         []int                                             // blocks per stage (nil: the default)
	wrap          func(parallel.Communicator) parallel.Communicator // wraps each rank's communicator (nil: none)
	devOf         func(rank int) *device.Device                     // rank's device (nil: a cpu, of capOf's capacity); the reference's is devOf(0)
	autocast      dtype.DType                                       // the forward's autocast dtype (Invalid: none)
	lossScale     bool                                              // F16 dynamic loss scaling (amp.Scaler's defaults)
}

func smallPipe(dt dtype.DType, stages int, sched parallel.Schedule) pipeSetup {
	return pipeSetup{
		cfg: nn.GPTConfig{Vocab: 29, Context: 8, Layers: 4, Heads: 2, Width: 16, Bias: true},
		dt:  dt, batch: 2, seq: 8, m: 4, steps: 20, stages: stages, sched: sched,
		adam: optim.AdamConfig{LR: 1e-2},
	}
}

// tokens returns micro-batch i of step's token indices and targets (the
// next token), the same for every run: each sequence counts from a random
// token by a random stride of 1 to 3 (mod Vocab), which the model learns.
func (ps pipeSetup) tokens(step, i int) (idx, tgt []int64) {
	rng := rand.New(rand.NewPCG(uint64(step), uint64(i)))
	for range ps.batch {
		a, d := rng.IntN(ps.cfg.Vocab), 1+rng.IntN(3)
		for j := range ps.seq {
			idx = append(idx, int64((a+j*d)%ps.cfg.Vocab))
			tgt = append(tgt, int64((a+(j+1)*d)%ps.cfg.Vocab))
		}
	}
	return idx, tgt
}

func (ps pipeSetup) loss(logits *autograd.Tensor, step, i int) *autograd.Tensor {
	_, tgt := ps.tokens(step, i)
	flat := logits.Reshape(-1, ps.cfg.Vocab)
	logits.Release()
	y := logits.Scope().FromInt64s(logits.Device(), []int{len(tgt)}, tgt)
	return autograd.CrossEntropy(flat, y, autograd.CEOptions{})
}

// pipeResult is a run's losses and final parameters by name.
type pipeResult struct {
	losses []float64
	params map[string][]float64
	stats  []parallel.PipeStats // per stage, of the last step
	norms  []float64            // the reference's, with a clip: every step's gradient norm
	scales []float64            // the reference's, with loss scaling: the scale after every step
}

// reference trains the model on one device with gradient accumulation
// over the same micro-batches (train.Stepper, Accum m).
func (ps pipeSetup) reference(t *testing.T) pipeResult {
	t.Helper()
	dev := ps.device(0)
	g, err := nn.NewGPT(nn.NewBuilder(dev, ps.dt, 7), "gpt", ps.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(g)
	opt, err := optim.NewAdamW(g.Params(), ps.adam)
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Release()
	rec := &sumRecorder{Optimizer: opt}
	st := &train.Stepper{Opt: rec, Accum: ps.m, Clip: ps.clip, Autocast: ps.autocast}
	if ps.lossScale {
		st.Scaler = amp.NewScaler(dtype.F16, amp.ScalerConfig{})
	}
	res := pipeResult{params: map[string][]float64{}}
	for step := range ps.steps {
		loss, _, err := st.Step(func(s *autograd.Scope, i int) *autograd.Tensor {
			idx, _ := ps.tokens(step, i)
			return ps.loss(g.Forward(s.FromInt64s(dev, []int{ps.batch, ps.seq}, idx)), step, i)
		})
		if err != nil {
			t.Fatal(err)
		}
		res.losses = append(res.losses, loss)
		res.norms = append(res.norms, math.Sqrt(rec.last))
		if st.Scaler != nil {
			res.scales = append(res.scales, st.Scaler.Scale())
		}
	}
	for _, p := range g.Params() {
		res.params[p.Name] = p.T.Float64s()
	}
	return res
}

// pipeline trains the model with ps.stages in-process stages, each with
// its own AdamW over its stage's parameters.
func (ps pipeSetup) pipeline() (pipeResult, error) {
	res := pipeResult{params: map[string][]float64{}, stats: make([]parallel.PipeStats, ps.stages)}
	stages := make([]pipeResult, ps.stages)
	devs := make([]*device.Device, ps.stages)
	for r := range devs {
		devs[r] = ps.device(r)
	}
	err := parallel.Run(parallel.NewGroup(ps.stages), func(c parallel.Communicator) error {
		if ps.wrap != nil {
			c = ps.wrap(c)
		}
		var err error
		stages[c.Rank()], err = ps.stage(c, devs[c.Rank()])
		return err
	})
	if err != nil {
		return res, err
	}
	last := stages[ps.stages-1].losses
	for r, st := range stages {
		for step, l := range st.losses {
			if l != last[step] {
				return res, fmt.Errorf("stage %d's loss of step %d = %v, the last stage's %v", r, step, l, last[step])
			}
		}
		for name, v := range st.params {
			res.params[name] = v
		}
		res.stats[r] = st.stats[0]
	}
	res.losses = last
	return res, nil
}

// device returns rank r's device.
func (ps pipeSetup) device(r int) *device.Device {
	if ps.devOf != nil {
		return ps.devOf(r)
	}
	var capacity int64
	if ps.capOf != nil {
		capacity = ps.capOf(r)
	}
	return cpu.New(r, device.Options{Capacity: capacity})
}

// stage trains this rank's stage on dev over c and returns its losses,
// its parameters and its last step's statistics.
func (ps pipeSetup) stage(c parallel.Communicator, dev *device.Device) (pipeResult, error) {
	res := pipeResult{params: map[string][]float64{}}
	r := c.Rank()
	g, err := nn.NewGPT(nn.NewDeferredBuilder(dev, ps.dt, 7), "gpt", ps.cfg, nil)
	if err != nil {
		return res, err
	}
	pp, err := parallel.NewPipe(c, g, parallel.PipeConfig{MicroBatches: ps.m, Batch: ps.batch, Seq: ps.seq, Schedule: ps.sched, Split: ps.split})
	if err != nil {
		return res, err
	}
	defer nn.Release(g)
	opt, err := optim.NewAdamW(pp.Params(), ps.adam)
	if err != nil {
		return res, err
	}
	defer opt.Release()
	for step := range ps.steps {
		b := parallel.PipeBatch{
			Tokens: func(s *autograd.Scope, i int) *autograd.Tensor {
				idx, _ := ps.tokens(step, i)
				return s.FromInt64s(dev, []int{ps.batch, ps.seq}, idx)
			},
			Loss: func(logits *autograd.Tensor, i int) *autograd.Tensor {
				if ps.failAt != nil && ps.failAt(r, step, i) {
					return nil
				}
				return ps.loss(logits, step, i)
			},
		}
		loss, err := pp.Step(b)
		if err != nil {
			return res, err
		}
		if ps.clip > 0 {
			if _, err := optim.ClipGradNormOf(pp.Optimizer(opt), ps.clip); err != nil {
				return res, err
			}
		}
		if err := opt.Step(); err != nil {
			return res, err
		}
		opt.ZeroGrad()
		res.losses = append(res.losses, loss)
	}
	res.stats = []parallel.PipeStats{pp.Stats()}
	for _, p := range pp.Params() {
		res.params[p.Name] = p.T.Float64s()
	}
	return res, nil
}

// compare reports the first difference of got from want beyond rel
// (0: bit for bit).
func compare(got, want pipeResult, rel float64) error {
	if len(got.losses) != len(want.losses) {
		return fmt.Errorf("%d losses, want %d", len(got.losses), len(want.losses))
	}
	for i := range got.losses {
		if !near(got.losses[i], want.losses[i], rel) || math.IsNaN(got.losses[i]) {
			return fmt.Errorf("step %d: loss %v, one device %v", i, got.losses[i], want.losses[i])
		}
	}
	if len(got.params) != len(want.params) {
		return fmt.Errorf("%d parameters, want %d", len(got.params), len(want.params))
	}
	for name, w := range want.params {
		g := got.params[name]
		if len(g) != len(w) {
			return fmt.Errorf("%s: %d elements, want %d", name, len(g), len(w))
		}
		for i := range w {
			if !near(g[i], w[i], rel) {
				return fmt.Errorf("%s[%d] = %v, one device %v", name, i, g[i], w[i])
			}
		}
	}
	return nil
}

func near(a, b, rel float64) bool {
	if rel == 0 {
		return math.Float64bits(a) == math.Float64bits(b)
	}
	return math.Abs(a-b) <= rel*math.Max(math.Abs(b), 1e-3)
}

// TestPipeMatchesOneDevice trains the 4-block GPT for 20 AdamW steps of 4
// micro-batches on 1, 2 and 4 in-process stages under both schedules:
// the losses and every parameter must equal one device's with gradient
// accumulation over the same micro-batches — bit for bit in F64 and F32
// (the same kernels add in the same order on every stage).
func TestPipeMatchesOneDevice(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F64, dtype.F32} {
		want := smallPipe(dt, 1, parallel.OneFOneB).reference(t)
		for _, stages := range []int{1, 2, 4} {
			for _, sched := range []parallel.Schedule{parallel.OneFOneB, parallel.GPipe} {
				ps := smallPipe(dt, stages, sched)
				start := time.Now()
				got, err := ps.pipeline()
				if err != nil {
					t.Fatalf("%s, %d stages, %s: %v", dt, stages, sched, err)
				}
				if err := compare(got, want, 0); err != nil {
					t.Errorf("%s, %d stages, %s: %v", dt, stages, sched, err)
				}
				t.Logf("%s, %d stages, %s: 20 steps in %v, losses %.4f → %.4f", dt, stages, sched, time.Since(start).Round(time.Millisecond), got.losses[0], got.losses[len(got.losses)-1])
			}
		}
	}
}

// TestPipeClipping clips every stage by the norm of the whole model's
// gradients (Pipe.Optimizer's AllSum): 20 steps on 2 and 4 stages must
// match one device's train.Stepper with the same Clip — within 1e-9
// relative in F64 and 1e-5 in F32, not bit for bit: the global sum of
// squares adds the stages' partial sums, one device the parameters' in
// one run (another association).
func TestPipeClipping(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F64, dtype.F32} {
		rel := map[dtype.DType]float64{dtype.F64: 1e-9, dtype.F32: 1e-5}[dt]
		ref := smallPipe(dt, 1, parallel.OneFOneB)
		ref.clip = 0.05 // below every step's norm here: every step clips
		want := ref.reference(t)
		for _, stages := range []int{2, 4} {
			ps := ref
			ps.stages = stages
			got, err := ps.pipeline()
			if err != nil {
				t.Fatalf("%s, %d stages: %v", dt, stages, err)
			}
			if err := compare(got, want, rel); err != nil {
				t.Errorf("%s, %d stages: %v", dt, stages, err)
			}
			worst := 0.0
			for name, w := range want.params {
				for i := range w {
					worst = math.Max(worst, math.Abs(got.params[name][i]-w[i])/math.Max(math.Abs(w[i]), 1e-3))
				}
			}
			t.Logf("%s, %d stages: losses %.4f → %.4f, largest relative parameter difference %.2g", dt, stages, got.losses[0], got.losses[len(got.losses)-1], worst)
		}
	}
}

// TestPipeEdges: fewer micro-batches than stages (the warm-up is cut
// short: min(P−s−1, M)), one micro-batch, and uneven splits, 5 steps each,
// bit for bit against one device in F64.
func TestPipeEdges(t *testing.T) {
	cases := []struct {
		stages, m int
		split     []int
	}{{4, 1, nil}, {4, 2, nil}, {4, 3, nil}, {2, 3, []int{1, 3}}, {2, 2, []int{3, 1}}, {3, 5, []int{2, 1, 1}}}
	for _, c := range cases {
		for _, sched := range []parallel.Schedule{parallel.OneFOneB, parallel.GPipe} {
			ps := smallPipe(dtype.F64, c.stages, sched)
			ps.m, ps.steps, ps.split = c.m, 5, c.split
			ref := ps
			ref.stages = 1
			want := ref.reference(t)
			got, err := ps.pipeline()
			if err != nil {
				t.Fatalf("%d stages %v, M %d, %s: %v", c.stages, c.split, c.m, sched, err)
			}
			if err := compare(got, want, 0); err != nil {
				t.Errorf("%d stages %v, M %d, %s: %v", c.stages, c.split, c.m, sched, err)
			}
		}
	}
}

// TestPipeOnCudaRanks trains the GPT on 2 stages on the two emulated GPUs
// (staging bound 96 bytes: each activation crosses in rounds) for 5
// steps under both schedules: bit for bit the run of one emulated GPU in
// F32. Where there is one GPU, stage 1 runs on the cpu — other kernels —
// and the run must match within 1e-5 relative.
func TestPipeOnCudaRanks(t *testing.T) {
	defer parallel.SetStageBytes(96)()
	gpus := openGPUs(t, cudatest.GPUs(t, 2))
	rel := 0.0
	if len(gpus) < 2 {
		rel = 1e-5
	}
	for _, sched := range []parallel.Schedule{parallel.OneFOneB, parallel.GPipe} {
		ps := smallPipe(dtype.F32, 2, sched)
		ps.steps = 5
		ps.devOf = func(r int) *device.Device {
			if r < len(gpus) {
				return gpus[r]
			}
			return cpu.New(r, device.Options{})
		}
		want := ps.reference(t)
		got, err := ps.pipeline()
		if err != nil {
			t.Fatalf("%s: %v", sched, err)
		}
		if err := compare(got, want, rel); err != nil {
			t.Errorf("%s: %v", sched, err)
		}
		t.Logf("%s on %d GPUs: losses %.4f → %.4f", sched, len(gpus), got.losses[0], got.losses[len(got.losses)-1])
	}
	for _, g := range gpus {
		if live := g.Leaks(); len(live) != 0 {
			t.Errorf("%s: blocks left besides the resident cuBLAS workspace: %v", g.Name(), live)
		}
	}
}

// TestHostStagedPipeOnTwoGPUs is TestPipeOnCudaRanks through HostStaged
// (what an MPI pipeline of GPUs runs on), 96-byte rounds: bit for bit one
// emulated GPU's run, every staging tensor freed.
func TestHostStagedPipeOnTwoGPUs(t *testing.T) {
	defer parallel.SetStageBytes(96)()
	cudatest.NeedGPUs(t, 2)
	gpus := openGPUs(t, 2)
	hosts := []*device.Device{cpu.New(100, device.Options{}), cpu.New(101, device.Options{})}
	ps := smallPipe(dtype.F32, 2, parallel.OneFOneB)
	ps.steps = 3
	ps.devOf = func(r int) *device.Device { return gpus[r] }
	ps.wrap = func(c parallel.Communicator) parallel.Communicator { return parallel.HostStaged(c, hosts[c.Rank()]) }
	want := ps.reference(t)
	got, err := ps.pipeline()
	if err != nil {
		t.Fatal(err)
	}
	if err := compare(got, want, 0); err != nil {
		t.Error(err)
	}
	for _, h := range hosts {
		if st := h.Stats().ByTag[device.Communication]; st.Current != 0 || st.Peak == 0 {
			t.Errorf("%s: staging bytes current %d peak %d, want 0 and > 0", h, st.Current, st.Peak)
		}
	}
}
