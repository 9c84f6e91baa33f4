package kernels

import (
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
