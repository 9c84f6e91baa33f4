package kernels

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// BenchmarkConvPairB times the bfloat16 forward pass of ResNet-18's 3×3
// layers (small stem, batch 32, 32×32 and 64×64 images, stride 1 and 2)
// with its im2col written as pair panels (conv_half_pairs.go) and through
// the 16-bit tile the GEMM driver packs, alternately in one loop, best of
// each: it reports the pair-panel route's GFLOP/s and the tile route's
// best time over its (xtile). Under -test.cpu 1 the passes are timed by
// the thread's processor time (benchClock).
func BenchmarkConvPairB(b *testing.B) {
	defer func(on bool) { convPairB = on }(convPairB)
	r := rand.New(rand.NewPCG(60, 4))
	for _, c := range append(resnetStages(32, 32), resnetStages(32, 64)...) {
		b.Run("layer="+c.name, func(b *testing.B) {
			c.alloc(r)
			fwd := convPassFuncs(c, true)[0]
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			clock := benchClock()
			best := [2]time.Duration{1 << 62, 1 << 62}
			for b.Loop() {
				for i, on := range []bool{true, false} {
					convPairB = on
					t0 := clock()
					fwd()
					best[i] = min(best[i], clock()-t0)
				}
			}
			b.ReportMetric(c.flops()/best[0].Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(float64(best[1])/float64(best[0]), "xtile")
		})
	}
}
