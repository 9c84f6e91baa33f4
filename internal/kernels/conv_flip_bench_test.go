package kernels

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/internal/cputime"
)

// BenchmarkConvFlipGradInput times the bfloat16 input gradient of
// ResNet-18's stride-1 3×3 layers (small stem, batch 32, 32×32 and 64×64
// images) by the
// flipped forward convolution (conv_flip.go) and by the input-gradient
// kernel alternately in one loop (whether or not this machine would take
// the route), best of each: it reports the flipped
// route's GFLOP/s and the kernel's best time over the flipped one's, and
// the forward pass's and flipFilters' best times alone. Under -test.cpu 1
// the passes run on the calling thread and are timed by its processor
// time, which leaves out the time a shared machine gave to others.
func BenchmarkConvFlipGradInput(b *testing.B) {
	defer func(on bool) { convFlipGradInput = on }(convFlipGradInput)
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range append(resnetStages(32, 32), resnetStages(32, 64)...) {
		if c.p.StrideH != 1 {
			continue
		}
		b.Run("layer="+c.name, func(b *testing.B) {
			c.alloc(r)
			passes := convPassFuncs(c, true)
			hw := toBF16(c.w)
			wf := make([]uint16, len(hw.Bits))
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			clock := benchClock()
			best := [4]time.Duration{1 << 62, 1 << 62, 1 << 62, 1 << 62}
			timed := func(i int, f func()) {
				t0 := clock()
				f()
				best[i] = min(best[i], clock()-t0)
			}
			for b.Loop() {
				for i, on := range []bool{true, false} {
					convFlipGradInput = on
					timed(i, passes[1])
				}
				timed(2, passes[0])
				timed(3, func() { flipFilters(&c.p, wf, hw.Bits) })
			}
			b.ReportMetric(c.flops()/best[0].Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(float64(best[1])/float64(best[0]), "xkernel")
			b.ReportMetric(float64(best[2].Microseconds()), "fwd-us")
			b.ReportMetric(float64(best[3].Microseconds()), "flip-us")
		})
	}
}

// benchClock is the calling thread's processor time under GOMAXPROCS 1
// where the system tells it, else the wall time.
func benchClock() func() time.Duration {
	if runtime.GOMAXPROCS(0) == 1 && cputime.Thread() != 0 {
		return cputime.Thread
	}
	base := time.Now()
	return func() time.Duration { return time.Since(base) }
}
