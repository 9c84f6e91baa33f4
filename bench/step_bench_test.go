package bench_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

// BenchmarkResNetStep times one Adam training step of ResNet-18 and
// ResNet-50 (small stem, 3×32×32 inputs, 10 classes, batch 32) on the cpu,
// in F32 and under BF16 autocast: the step `headroom bench --torch`
// compares with PyTorch. It reports samples/s; profile it with
// -cpuprofile.
func BenchmarkResNetStep(b *testing.B) {
	for _, model := range []struct {
		name string
		f    func(*nn.Builder, string, nn.ResNetConfig) (*nn.ResNet, error)
	}{{"resnet18", nn.ResNet18}, {"resnet50", nn.ResNet50}} {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			b.Run(model.name+"/"+dt.String(), func(b *testing.B) { resnetStep(b, model.f, dt) })
		}
	}
}

func resnetStep(b *testing.B, f func(*nn.Builder, string, nn.ResNetConfig) (*nn.ResNet, error), dt dtype.DType) {
	const batch, size = 32, 32
	dev := cpu.New(0, device.Options{})
	m, err := f(nn.NewBuilder(dev, dtype.F32, 1), "resnet", nn.ResNetConfig{Stem: "small", Classes: 10})
	if err != nil {
		b.Fatal(err)
	}
	defer nn.Release(m)
	opt, err := optim.NewAdam(m.Params(), optim.AdamConfig{LR: 1e-3})
	if err != nil {
		b.Fatal(err)
	}
	defer opt.Release()
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, batch*3*size*size)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	y := make([]int64, batch)
	for i := range y {
		y[i] = int64(rng.IntN(10))
	}
	autocast := dtype.Invalid
	if dt != dtype.F32 {
		autocast = dt
	}
	st := &train.Stepper{Opt: opt, Autocast: autocast}
	step := func() {
		if _, _, err := st.Step(func(s *autograd.Scope, _ int) *autograd.Tensor {
			return autograd.CrossEntropy(m.Forward(s.FromFloat32s(dev, []int{batch, 3, size, size}, x)),
				s.FromInt64s(dev, []int{batch}, y), autograd.CEOptions{})
		}); err != nil {
			b.Fatal(err)
		}
	}
	step() // warm-up: the allocator's cache and the packed buffers
	b.ResetTimer()
	for b.Loop() {
		step()
	}
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "samples/s")
}
