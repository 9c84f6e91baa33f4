package kernels

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// BenchmarkConvWinograd times ResNet-18's stride-1 3×3 layers (small stem,
// batch 32, 32×32 inputs: 64@32×32, 128@16×16, 256@8×8, 512@4×4; with
// size=64 the 64×64 inputs of bench's resnet18-64; with small= the
// stride-1 layers of examples/resnet's SmallResNet at its batch of 128),
// forward and input
// gradient, by the direct route and the Winograd route alternately in one
// loop, best of each: it reports the Winograd route's effective GFLOP/s
// (counting the direct convolution's 2·N·K·C·9·OH·OW), the direct
// route's, both best times and the speed-up. Under -test.cpu 1 the passes
// are timed by the thread's processor time (benchClock).
func BenchmarkConvWinograd(b *testing.B) {
	defer func(algo int) { convAlgo = algo }(convAlgo)
	r := rand.New(rand.NewPCG(9, 10))
	for _, c := range append(append(resnetStages(32, 32), resnetStages64()...), smallResNetStage1(128)...) {
		if c.p.StrideH != 1 {
			continue
		}
		for pass, name := range []string{"fwd", "dgrad"} {
			b.Run("layer="+c.name+"/pass="+name, func(b *testing.B) {
				c.alloc(r)
				f := convPassFuncs(c, false)[pass]
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				clock := benchClock()
				best := [2]time.Duration{1 << 62, 1 << 62}
				for b.Loop() {
					for i, algo := range []int{convAlgoDirect, convAlgoWinograd} {
						convAlgo = algo
						t0 := clock()
						f()
						best[i] = min(best[i], clock()-t0)
					}
				}
				b.ReportMetric(c.flops()/best[1].Seconds()/1e9, "wino-GFLOP/s")
				b.ReportMetric(c.flops()/best[0].Seconds()/1e9, "direct-GFLOP/s")
				b.ReportMetric(float64(best[1].Microseconds()), "wino-us")
				b.ReportMetric(float64(best[0].Microseconds()), "direct-us")
				b.ReportMetric(float64(best[0])/float64(best[1]), "speedup")
			})
		}
	}
}

// resnetStages64 is resnetStages(32, 64) with each name prefixed by
// "size=64/".
func resnetStages64() []*convBench {
	cs := resnetStages(32, 64)
	for _, c := range cs {
		c.name = "size=64/" + c.name
	}
	return cs
}

// smallResNetStage1 is smallResNetConvs(n)'s stride-1 3×3 layers after the
// stem, each name prefixed by "small=".
func smallResNetStage1(n int) []*convBench {
	var cs []*convBench
	for _, c := range smallResNetConvs(n) {
		if c.p.StrideH == 1 && c.p.R == 3 && c.p.C > 1 {
			c.name = "small=" + c.name
			cs = append(cs, c)
		}
	}
	return cs
}
