package bench_test

import (
	"testing"

	"github.com/headroom-ml/headroom/bench"
	"github.com/headroom-ml/headroom/dtype"
)

// BenchmarkResNetStep times one Adam training step of ResNet-18 and
// ResNet-50 (small stem, 3×32×32 inputs, 10 classes, batch 32) on the cpu,
// in F32 and under BF16 autocast, then the same on 3×64×64 inputs under
// 64x64/ (resnet18-64, resnet50-64: -bench 'ResNetStep/64x64/resnet18';
// -bench 'ResNetStep/resnet18' still runs the 32×32 steps alone): the
// steps `headroom bench --torch --models resnet18,resnet50,resnet18-64,
// resnet50-64` compares with PyTorch (bench.NewSpeedStep, one definition
// for both). It reports samples/s; profile it with -cpuprofile.
func BenchmarkResNetStep(b *testing.B) {
	for _, model := range []string{"resnet18", "resnet50"} {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			b.Run(model+"/"+dt.String(), func(b *testing.B) { speedStep(b, model, dt) })
		}
	}
	b.Run("64x64", func(b *testing.B) {
		for _, model := range []string{"resnet18-64", "resnet50-64"} {
			for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
				b.Run(model+"/"+dt.String(), func(b *testing.B) { speedStep(b, model, dt) })
			}
		}
	})
}

// BenchmarkGPTStep times one AdamW step of the 6×256 GPT (4 heads, context
// 256, bytes, batch 16) in F32 and under BF16 autocast: `headroom bench
// --torch --models gpt6x256`'s step.
func BenchmarkGPTStep(b *testing.B) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		b.Run("gpt6x256/"+dt.String(), func(b *testing.B) { speedStep(b, "gpt6x256", dt) })
	}
}

func speedStep(b *testing.B, model string, dt dtype.DType) {
	s, err := bench.NewSpeedStep(model, dt)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Release()
	if err := s.Run(); err != nil { // warm-up: the optimizer's state, the allocator's cache, the packed buffers
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := s.Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(s.Batch*b.N)/b.Elapsed().Seconds(), "samples/s")
}
