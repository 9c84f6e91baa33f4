package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/internal/cputime"
)

// BenchmarkGemmBias times, alternately, the fused bias (GemmBias), the
// bias copied into C before a beta-1 Gemm, and Gemm with beta 0 and no
// bias (the floor), on the Linear shapes of a width-256 GPT over 4096
// tokens, and reports the least processor time of each (the least
// disturbed on a shared machine; run it with -cpu 1) in ms and the fused and copy times over the floor.
func BenchmarkGemmBias(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range [][3]int{{4096, 768, 256}, {4096, 1024, 256}, {4096, 256, 1024}} {
		m, n, k := s[0], s[1], s[2]
		b.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(b *testing.B) {
			x, w := gemmToT[float32](gemmRand(r, m*k)), gemmToT[float32](gemmRand(r, n*k))
			bias, c := gemmToT[float32](gemmRand(r, n)), make([]float32, m*n)
			g := GemmArgs{TransB: true, M: m, N: n, K: k, Alpha: 1, LdA: k, LdB: k, LdC: n}
			g1 := g
			g1.Beta = 1
			paths := []func(){
				func() { GemmBias(g, x, w, bias, c) },
				func() {
					for i := range m {
						copy(c[i*n:(i+1)*n], bias)
					}
					Gemm(g1, x, w, c)
				},
				func() { Gemm(g, x, w, c) },
			}
			best := []time.Duration{math.MaxInt64, math.MaxInt64, math.MaxInt64}
			for b.Loop() {
				for i, f := range paths {
					t0 := cputime.Process()
					f()
					best[i] = min(best[i], cputime.Process()-t0)
				}
			}
			ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 }
			b.ReportMetric(ms(best[0]), "fused-ms")
			b.ReportMetric(ms(best[1]), "copy-ms")
			b.ReportMetric(ms(best[2]), "nobias-ms")
			b.ReportMetric(best[0].Seconds()/best[2].Seconds(), "fused/nobias")
			b.ReportMetric(best[1].Seconds()/best[2].Seconds(), "copy/nobias")
		})
	}
}
