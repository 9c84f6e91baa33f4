package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// BenchmarkConvDirect times ResNet-18's stride-1 3×3 layers at batch 32
// over 32×32 inputs, today's bfloat16 route (Conv2dHalf: im2col into the
// pair GEMM) against the direct kernel, alternating in one loop; it
// reports the best time of each as GFLOP/s and the speed-up.
func BenchmarkConvDirect(b *testing.B) {
	if dxAsm() == nil {
		b.Skip("no AVX512_BF16 assembly")
	}
	for _, c := range resnetStages(32, 32) {
		if strings.HasPrefix(c.name, "s2_") {
			continue
		}
		b.Run(c.name, func(b *testing.B) { benchConvDirect(b, c.p) })
	}
}

// benchConvDirect is one layer of BenchmarkConvDirect.
func benchConvDirect(b *testing.B, p ConvArgs) {
	r := rand.New(rand.NewSource(1))
	x, w := dxOperands(r, p)
	yOld := make([]float32, p.N*p.K*p.OH*p.OW)
	yNew := make([]float32, len(yOld))
	wsOld := make([]float32, ConvWorkspace(ConvForward, p, ConvHalf))
	wsNew := make([]float32, convDirectBF16Words(p, false))
	hx, hw := Half16{Bits: x, BF16: true}, Half16{Bits: w, BF16: true}
	old := func() { Conv2dHalf(p, ConvOut{F: yOld}, hx, hw, wsOld) }
	direct := func() { convDirectBF16(p, ConvOut{F: yNew}, x, w, wsNew) }
	old()
	direct()
	var worst float64
	for i := range yOld {
		worst = max(worst, math.Abs(float64(yOld[i]-yNew[i])))
	}
	b.Logf("%+v: max |old - direct| = %g; ws %d (old) and %d (direct) words", p, worst, len(wsOld), len(wsNew))
	benchOldDirect(b, p, old, direct)
}

// BenchmarkConvDirectWGrad is BenchmarkConvDirect for the weight gradient:
// the im2col route (runConvJobHalf) against convDirectWGrad, over the
// stride-1 3×3 layers of ResNet-18 at 32×32 and 64×64 inputs, batch 32.
func BenchmarkConvDirectWGrad(b *testing.B) {
	if sbgemm == nil {
		b.Skip("no AVX512_BF16 pair kernel")
	}
	for _, size := range []int{32, 64} {
		for _, c := range resnetStages(32, size) {
			if strings.HasPrefix(c.name, "s2_") {
				continue
			}
			b.Run(fmt.Sprintf("size=%d/%s", size, c.name), func(b *testing.B) { benchConvDirectWGrad(b, c.p) })
		}
	}
}

// benchConvDirectWGrad is one layer of BenchmarkConvDirectWGrad.
func benchConvDirectWGrad(b *testing.B, p ConvArgs) {
	r := rand.New(rand.NewSource(1))
	x, _ := dxOperands(r, p)
	dy, _ := dxOperands(r, ConvArgs{N: p.N, C: p.K, H: p.H, W: p.W})
	dwOld, dwNew := make([]float32, p.K*p.C*9), make([]float32, p.K*p.C*9)
	wsOld := make([]float32, ConvWorkspace(ConvGradWeight, p, ConvHalf))
	wsNew := make([]float32, max(convDirectWGradWords(p, 1), ConvWorkspace(ConvGradWeight, p, ConvHalf)-convAlign))
	hx, hdy := Half16{Bits: x, BF16: true}, Half16{Bits: dy, BF16: true}
	old := func() { runConvJobHalf(ConvGradWeight, p, ConvOut{F: dwOld}, hdy, hx, wsOld) }
	direct := func() { convDirectWGrad(p, ConvOut{F: dwNew}, dy, x, wsNew) }
	old()
	direct()
	var worst float64
	for i := range dwOld {
		worst = max(worst, math.Abs(float64(dwOld[i]-dwNew[i])))
	}
	b.Logf("%+v: max |old - direct| = %g; ws %d (old) and %d (direct) words", p, worst, len(wsOld), len(wsNew))
	benchOldDirect(b, p, old, direct)
}

// benchOldDirect alternates old and direct, passes of the 3×3 convolution
// p, and reports the best time of each as GFLOP/s and the speed-up.
func benchOldDirect(b *testing.B, p ConvArgs, old, direct func()) {
	bestOld, bestNew := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for b.Loop() {
		t := time.Now()
		old()
		bestOld = min(bestOld, time.Since(t))
		t = time.Now()
		direct()
		bestNew = min(bestNew, time.Since(t))
	}
	flops := 2 * float64(p.N*p.K*p.C*9*p.OH*p.OW)
	b.ReportMetric(flops/bestOld.Seconds()/1e9, "old-GFLOP/s")
	b.ReportMetric(flops/bestNew.Seconds()/1e9, "direct-GFLOP/s")
	b.ReportMetric(bestOld.Seconds()/bestNew.Seconds(), "speedup")
}
