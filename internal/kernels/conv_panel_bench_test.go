package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// BenchmarkConvPanels times the float32 forward pass and weight gradient
// of ResNet-18's 3×3 convolutions at batch 32 (32×32 and 64×64 inputs)
// with im2col written straight into B's panels and through the dense
// tile (convPanels false), alternately in one loop, each after a GEMM of
// the same FLOPs (sameFlopGemm) and each first every other time, and
// reports the best GFLOP/s of each, the
// panels' xGEMM and their speedup xdense. Under -cpu 1 each is timed by
// the thread's processor time (benchClock), which leaves out what a
// shared machine gave to others.
func BenchmarkConvPanels(b *testing.B) {
	defer func(on bool) { convPanels = on }(convPanels)
	r := rand.New(rand.NewPCG(25, 26))
	for _, c := range append(resnetStages(32, 32), resnetStages(32, 64)...) {
		for _, pass := range []int{0, 2} {
			name := []string{"fwd", "dgrad", "wgrad"}[pass]
			b.Run(fmt.Sprintf("layer=%s/pass=%s", c.name, name), func(b *testing.B) {
				c.alloc(r)
				f, gemm := convPassFuncs(c, false)[pass], sameFlopGemm(r, c, false)
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				clock := benchClock()
				best := [3]time.Duration{1 << 62, 1 << 62, 1 << 62}
				timed := func(i int, f func()) {
					t0 := clock()
					f()
					best[i] = min(best[i], clock()-t0)
				}
				for it := 0; b.Loop(); it++ {
					for k := range 2 {
						i := (k + it) % 2 // each variant first every other time, each after the GEMM
						convPanels = i == 0
						timed(i, f)
						timed(2, gemm)
					}
				}
				gf := func(i int) float64 { return c.flops() / best[i].Seconds() / 1e9 }
				b.ReportMetric(gf(0), "GFLOP/s")
				b.ReportMetric(gf(1), "denseGFLOP/s")
				b.ReportMetric(gf(2), "gemmGFLOP/s")
				b.ReportMetric(gf(0)/gf(2), "xGEMM")
				b.ReportMetric(gf(0)/gf(1), "xdense")
			})
		}
	}
}
