package kernels

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/internal/cputime"
)

// BenchmarkGEMMSharedA times products whose op(A) several column chunks
// read (the weight gradient's short M) with op(A) packed once per call
// into the shared A, and with each compute task packing its own rows of
// it (gemmABudget 0), in turn in one loop, best of each, as float32 and
// as bfloat16 pairs (GemmHalf): it reports the shared run's GFLOP/s and
// the per-task run's time over it.
func BenchmarkGEMMSharedA(b *testing.B) {
	shapes := []gemmBench{
		{name: "wgrad_64x576x256", tb: true, m: 64, n: 576, k: 256},
		{name: "wgrad_64x576x1024", tb: true, m: 64, n: 576, k: 1024},
		{name: "wgrad_128x1152x256", tb: true, m: 128, n: 1152, k: 256},
		{name: "wgrad_64x4608x512", tb: true, m: 64, n: 4608, k: 512},
		{name: "fwd_64x2048x576", m: 64, n: 2048, k: 576},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range shapes {
		g, la, lb, lc := s.args()
		g.Batch, g.StrideA, g.StrideB, g.StrideC = 1, 0, 0, 0
		x, y, c := benchF32(r, la), benchF32(r, lb), make([]float32, lc)
		hx, hy := gemmHalfBits(r, la, true), gemmHalfBits(r, lb, true)
		b.Run(s.name+"/f32", func(b *testing.B) { benchSharedA(b, s.flops(), func() { Gemm(g, x, y, c) }) })
		b.Run(s.name+"/bf16", func(b *testing.B) {
			benchSharedA(b, s.flops(), func() { GemmHalf(g, hx, hy, true, true, c) })
		})
	}
}

// BenchmarkConvGradWeightSharedA is BenchmarkGEMMSharedA for the weight
// gradient of ResNet-18's CIFAR 3×3 convolutions at batch 32 (float32,
// and bfloat16 operands and dw).
func BenchmarkConvGradWeightSharedA(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range resnetStages(32, 32) {
		c.alloc(r)
		x, dy := bf16Of(c.x), bf16Of(c.dy)
		dw := Half16{Bits: make([]uint16, len(c.dw)), BF16: true}
		b.Run(c.name+"/f32", func(b *testing.B) { benchSharedA(b, c.flops(), c.gradWeight) })
		b.Run(c.name+"/bf16", func(b *testing.B) {
			benchSharedA(b, c.flops(), func() { Conv2dGradWeightHalf(c.p, ConvOut{H: dw}, dy, x, c.ws) })
		})
	}
}

// bf16Of rounds v to bfloat16.
func bf16Of(v []float32) Half16 {
	h := Half16{Bits: make([]uint16, len(v)), BF16: true}
	f32ToBF16(h.Bits, v)
	return h
}

// benchSharedA runs f with the shared A (index 0) and without it
// (gemmABudget 0) in turn, each keeping its best time, and reports the
// first's GFLOP/s and the second's time over it.
func benchSharedA(b *testing.B, flops float64, f func()) {
	budget := gemmABudget
	defer func() { gemmABudget = budget }()
	benchTurns(b, flops, f, []string{"xPerTask"}, func(i int) { gemmABudget = [2]int{budget, 0}[i] })
}

// benchTurns runs f under each of the len(names)+1 settings set makes, in
// turn in one loop (a new setting first each round), each keeping its
// best time and summing the processor time the process used: it reports
// setting 0's GFLOP/s, each other's best time over it as its name, and,
// where processor time is measured, each other's processor time over
// setting 0's as its name with "cpu" before it.
func benchTurns(b *testing.B, flops float64, f func(), names []string, set func(i int)) {
	best := make([]time.Duration, len(names)+1)
	cpu := make([]time.Duration, len(best))
	for i := range best {
		best[i] = 1 << 62
	}
	for n := 0; b.Loop(); n++ {
		for v := range best {
			i := (n + v) % len(best)
			set(i)
			t0, c0 := time.Now(), cputime.Process()
			f()
			best[i] = min(best[i], time.Since(t0))
			cpu[i] += cputime.Process() - c0
		}
	}
	set(0)
	b.ReportMetric(flops/best[0].Seconds()/1e9, "GFLOP/s")
	for i, name := range names {
		b.ReportMetric(float64(best[i+1])/float64(best[0]), name)
		if cpu[0] > 0 {
			b.ReportMetric(float64(cpu[i+1])/float64(cpu[0]), "cpu"+name)
		}
	}
}

// BenchmarkGEMMWait times the shared-mode products of BenchmarkGEMMPacking
// (ResNet-18's conv GEMMs, float32) and the weight gradients of
// BenchmarkConvGradWeightSharedA (bfloat16) with compute tasks that wait
// for B by yielding gemmWaitSpins times then sleeping (the default), by
// yielding only (xSpin, gemmWaitSpins −1), and by sleeping at once
// (xSleep, 0), in turn: it reports the default's GFLOP/s and the others'
// time over it.
func BenchmarkGEMMWait(b *testing.B) {
	spins := gemmWaitSpins
	defer func() { gemmWaitSpins = spins }()
	set := func(i int) { gemmWaitSpins = [3]int{spins, -1, 0}[i] }
	names := []string{"xSpin", "xSleep"}
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range resnet18GemmShapes {
		g, la, lb, lc := s.args()
		x, y, c := benchF32(r, la), benchF32(r, lb), make([]float32, lc)
		b.Run("gemm_"+s.name, func(b *testing.B) { benchTurns(b, s.flops(), func() { Gemm(g, x, y, c) }, names, set) })
	}
	for _, c := range resnetStages(32, 32) {
		c.alloc(r)
		x, dy := bf16Of(c.x), bf16Of(c.dy)
		dw := Half16{Bits: make([]uint16, len(c.dw)), BF16: true}
		f := func() { Conv2dGradWeightHalf(c.p, ConvOut{H: dw}, dy, x, c.ws) }
		b.Run("wgrad_bf16_"+c.name, func(b *testing.B) { benchTurns(b, c.flops(), f, names, set) })
	}
}
