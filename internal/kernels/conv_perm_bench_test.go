package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkConvPerm times the passes of ResNet-18's convolutions over
// planes of at most 64 pixels (cifarResNet18Convs at batch 32: 8×8 and
// 4×4, the stride-2 ones into them), which take a permutation path — the
// forward and weight gradient (im2col) and the input gradient (col2im),
// bfloat16 and float32 — with it and with the row copies alternately
// in each iteration, and reports the best time of each (steadier on a
// shared machine) in GFLOP/s and their ratio xRows (> 1: the permutation
// is faster).
func BenchmarkConvPerm(b *testing.B) {
	r := rand.New(rand.NewPCG(18, 19))
	defer func() { convPermOn = true }()
	for _, c := range cifarResNet18Convs(32) {
		if c.p.H*c.p.W > 64 {
			continue
		}
		c.alloc(r)
		half, f32 := convPassFuncs(c, true), convPassFuncs(c, false)
		for _, run := range []struct {
			dt   string
			pass int
		}{{"bf16", 0}, {"bf16", 1}, {"bf16", 2}, {"f32", 0}, {"f32", 1}, {"f32", 2}} {
			passes := map[string][3]func(){"bf16": half, "f32": f32}[run.dt]
			pass := run.pass
			b.Run(fmt.Sprintf("layer=%s/dtype=%s/pass=%s", c.name, run.dt, []string{"fwd", "dgrad", "wgrad"}[pass]), func(b *testing.B) {
				var best [2]time.Duration
				best[0], best[1] = time.Hour, time.Hour
				for b.Loop() {
					for i, on := range []bool{true, false} {
						convPermOn = on
						t0 := time.Now()
						passes[pass]()
						best[i] = min(best[i], time.Since(t0))
					}
				}
				convPermOn = true
				b.ReportMetric(c.flops()/best[0].Seconds()/1e9, "permGFLOP/s")
				b.ReportMetric(c.flops()/best[1].Seconds()/1e9, "rowsGFLOP/s")
				b.ReportMetric(best[1].Seconds()/best[0].Seconds(), "xRows")
			})
		}
	}
}
