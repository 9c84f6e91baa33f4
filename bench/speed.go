package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

// SpeedModels are the models of the speed-only rows, in order: ResNet-18
// and ResNet-50 with the small (CIFAR) stem on 3×32×32 images, 10 classes,
// batch 32, Adam; the same two on 3×64×64 images (resnet18-64,
// resnet50-64: same stem, so every feature map has four times the
// pixels, and batch 32); and a byte-level GPT of 6 layers × 256, 4 heads,
// context 256, batch 16, AdamW with gradient-norm clipping at 1.
// scripts/bench_torch.py builds the same models under the same names.
func SpeedModels() []string {
	names := make([]string, 0, len(speedResNets)+1)
	for _, r := range speedResNets {
		names = append(names, r.name)
	}
	return append(names, "gpt6x256")
}

// speedResNet is one ResNet speed model: depth 18 or 50, small stem,
// size×size RGB inputs, batch 32, Adam.
type speedResNet struct {
	name        string
	depth, size int
}

// speedResNets are the ResNet speed models, in SpeedModels' order.
var speedResNets = []speedResNet{{"resnet18", 18, 32}, {"resnet50", 50, 32}, {"resnet18-64", 18, 64}, {"resnet50-64", 50, 64}}

// gpt6x256 is the speed GPT's configuration.
var gpt6x256 = nn.GPTConfig{Vocab: 256, Context: 256, Layers: 6, Heads: 4, Width: 256, Bias: true, TieEmbeddings: true}

// SpeedStep is one speed model's training step on synthetic data (a
// fixed random batch), on a cpu device: BenchmarkResNetStep and the speed
// rows both run it.
type SpeedStep struct {
	Model string
	Batch int
	dev   *device.Device
	m     nn.Module
	opt   optim.Optimizer
	st    *train.Stepper
	loss  func(*autograd.Scope, int) *autograd.Tensor
}

// NewSpeedStep builds model (one of SpeedModels) on a new cpu device, its
// optimizer and batch; dt is F32 or BF16 (the forward under autocast).
func NewSpeedStep(model string, dt dtype.DType) (*SpeedStep, error) {
	if dt != dtype.F32 && dt != dtype.BF16 {
		return nil, fmt.Errorf("bench: speed step in %s: want f32 or bf16", dt)
	}
	if !slices.Contains(SpeedModels(), model) {
		return nil, fmt.Errorf("bench: unknown speed model %q (want one of %v)", model, SpeedModels())
	}
	s := &SpeedStep{Model: model, dev: cpu.New(0, device.Options{})}
	b := nn.NewBuilder(s.dev, dtype.F32, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	var err error
	if model == "gpt6x256" {
		err = s.gpt(b, rng)
	}
	for _, r := range speedResNets {
		if r.name == model {
			err = s.resnet(b, rng, r)
		}
	}
	if err != nil {
		s.Release()
		return nil, fmt.Errorf("bench: %s: %w", model, err)
	}
	s.st.Autocast = dtype.Invalid
	if dt != dtype.F32 {
		s.st.Autocast = dt
	}
	return s, nil
}

// resnet builds the ResNet-18 or -50 of spec with the small stem and
// Adam, and its batch of spec's image size.
func (s *SpeedStep) resnet(b *nn.Builder, rng *rand.Rand, spec speedResNet) error {
	size := spec.size
	s.Batch = 32
	f := nn.ResNet18
	if spec.depth == 50 {
		f = nn.ResNet50
	}
	r, err := f(b, "resnet", nn.ResNetConfig{Stem: "small", Classes: 10})
	if err != nil {
		return err
	}
	s.m = r
	if s.opt, err = optim.NewAdam(r.Params(), optim.AdamConfig{LR: 1e-3}); err != nil {
		return err
	}
	s.st = &train.Stepper{Opt: s.opt}
	x := make([]float32, s.Batch*3*size*size)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	y := randomInts(rng, s.Batch, 10)
	s.loss = func(sc *autograd.Scope, _ int) *autograd.Tensor {
		return autograd.CrossEntropy(r.Forward(sc.FromFloat32s(s.dev, []int{s.Batch, 3, size, size}, x)),
			sc.FromInt64s(s.dev, []int{s.Batch}, y), autograd.CEOptions{})
	}
	return nil
}

// gpt builds the 6 × 256 GPT and AdamW (β₂ 0.99, weight decay 0.1).
func (s *SpeedStep) gpt(b *nn.Builder, rng *rand.Rand) error {
	c := gpt6x256
	s.Batch = 16
	g, err := nn.NewGPT(b, "gpt", c, autograd.NewGenerator(1))
	if err != nil {
		return err
	}
	s.m = g
	if s.opt, err = optim.NewAdamW(g.Params(), optim.AdamConfig{LR: 3e-3, Beta2: 0.99, WeightDecay: 0.1}); err != nil {
		return err
	}
	s.st = &train.Stepper{Opt: s.opt, Clip: 1}
	n := s.Batch * c.Context
	x, y := randomInts(rng, n, c.Vocab), randomInts(rng, n, c.Vocab)
	s.loss = func(sc *autograd.Scope, _ int) *autograd.Tensor {
		return g.Loss(sc.FromInt64s(s.dev, []int{s.Batch, c.Context}, x), sc.FromInt64s(s.dev, []int{n}, y))
	}
	return nil
}

// randomInts returns n integers in [0, k).
func randomInts(rng *rand.Rand, n, k int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(rng.IntN(k))
	}
	return v
}

// Run runs one training step.
func (s *SpeedStep) Run() error {
	_, _, err := s.st.Step(s.loss)
	return err
}

// Params is the model's parameter count.
func (s *SpeedStep) Params() int64 { return nn.Count(s.m) }

// PeakBytes is the device's peak so far.
func (s *SpeedStep) PeakBytes() int64 { return s.dev.PeakBytes() }

// Release frees the model, the optimizer and the device.
func (s *SpeedStep) Release() {
	if s.opt != nil {
		s.opt.Release()
	}
	if s.m != nil {
		nn.Release(s.m)
	}
}

// TimeSteps runs step warmup times untimed, then timed times, timing each:
// it returns the timed steps' seconds. It refuses warmup < 2 or timed < 5,
// the least a median of steady-state steps needs (the first step
// allocates the optimizer's state, the second still warms caches).
func TimeSteps(step func() error, warmup, timed int) ([]float64, error) {
	if err := checkTiming(warmup, timed); err != nil {
		return nil, err
	}
	for range warmup {
		if err := step(); err != nil {
			return nil, err
		}
	}
	secs := make([]float64, timed)
	for i := range secs {
		began := time.Now()
		if err := step(); err != nil {
			return nil, err
		}
		secs[i] = time.Since(began).Seconds()
	}
	return secs, nil
}

// checkTiming refuses fewer than 2 warm-up or 5 timed steps.
func checkTiming(warmup, timed int) error {
	if warmup < 2 || timed < 5 {
		return fmt.Errorf("bench: %d warm-up and %d timed steps: want ≥ 2 and ≥ 5", warmup, timed)
	}
	return nil
}

// Median is the median of xs (the mean of the middle two for an even
// count; 0 for none). xs is not modified.
func Median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
