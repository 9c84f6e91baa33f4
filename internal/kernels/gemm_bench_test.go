package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/internal/cputime"
)

// gemmBench is one benchmarked shape: batch products of op(A) (M×K) and
// op(B) (K×N), packed densely.
type gemmBench struct {
	name           string
	ta, tb         bool
	m, n, k, batch int
}

func (s gemmBench) args() (g GemmArgs, la, lb, lc int) {
	batch := max(s.batch, 1)
	g = GemmArgs{TransA: s.ta, TransB: s.tb, M: s.m, N: s.n, K: s.k, Alpha: 1, Batch: batch,
		LdA: s.k, LdB: s.n, LdC: s.n, StrideA: s.m * s.k, StrideB: s.k * s.n, StrideC: s.m * s.n}
	if s.ta {
		g.LdA = s.m
	}
	if s.tb {
		g.LdB = s.k
	}
	return g, batch * s.m * s.k, batch * s.k * s.n, batch * s.m * s.n
}

func (s gemmBench) flops() float64 { return 2 * float64(s.m*s.n*s.k*max(s.batch, 1)) }

// BenchmarkGEMM measures GFLOP/s (2·M·N·K per product) on all workers:
// squares, then shapes of a GPT-2-small transformer with 4096 tokens
// (B·T) and 12 heads of 64: the linear layers forward (x·Wᵀ) and their
// weight gradient (dyᵀ·x), and attention's two batched products.
func BenchmarkGEMM(b *testing.B) {
	shapes := []gemmBench{
		{name: "f32/64", m: 64, n: 64, k: 64},
		{name: "f32/128", m: 128, n: 128, k: 128},
		{name: "f32/256", m: 256, n: 256, k: 256},
		{name: "f32/512", m: 512, n: 512, k: 512},
		{name: "f32/1024", m: 1024, n: 1024, k: 1024},
		{name: "f32/2048", m: 2048, n: 2048, k: 2048},
		{name: "f32/1024_tn", ta: true, m: 1024, n: 1024, k: 1024},
		{name: "f32/1024_nt", tb: true, m: 1024, n: 1024, k: 1024},
		{name: "f32/linear_4096x768x768", tb: true, m: 4096, n: 768, k: 768},
		{name: "f32/linear_4096x3072x768", tb: true, m: 4096, n: 3072, k: 768},
		{name: "f32/linear_4096x768x3072", tb: true, m: 4096, n: 768, k: 3072},
		{name: "f32/linear_dw_768x768x4096", ta: true, m: 768, n: 768, k: 4096},
		{name: "f32/attn_bmm_qk_384x256x256x64", tb: true, m: 256, n: 256, k: 64, batch: 384},
		{name: "f32/attn_bmm_pv_384x256x64x256", m: 256, n: 64, k: 256, batch: 384},
	}
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			g, la, lb, lc := s.args()
			r := rand.New(rand.NewPCG(1, 2))
			x, y, c := benchF32(r, la), benchF32(r, lb), make([]float32, lc)
			Gemm(g, x, y, c)
			for b.Loop() {
				Gemm(g, x, y, c)
			}
			b.ReportMetric(s.flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
	for _, n := range []int{256, 512} {
		s := gemmBench{m: n, n: n, k: n}
		b.Run(fmt.Sprintf("f64/%d", n), func(b *testing.B) {
			g, la, lb, lc := s.args()
			r := rand.New(rand.NewPCG(1, 2))
			x, y, c := gemmRand(r, la), gemmRand(r, lb), make([]float64, lc)
			for b.Loop() {
				Gemm(g, x, y, c)
			}
			b.ReportMetric(s.flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
	for _, bf16 := range []bool{true, false} {
		s := gemmBench{m: 1024, n: 1024, k: 1024}
		name := "f16in/1024"
		if bf16 {
			name = "bf16in/1024"
		}
		b.Run(name, func(b *testing.B) {
			g, la, lb, lc := s.args()
			r := rand.New(rand.NewPCG(1, 2))
			x, y, c := gemmHalfBits(r, la, bf16), gemmHalfBits(r, lb, bf16), make([]float32, lc)
			for b.Loop() {
				GemmHalf(g, x, y, bf16, bf16, c)
			}
			b.ReportMetric(s.flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

func benchF32(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(2*r.Float64() - 1)
	}
	return x
}

// BenchmarkGEMMKernel measures the float32 micro-kernel alone on one core,
// on panels that stay in L1 and L2 (kc = 256): the ceiling for the
// blocked GEMM.
func BenchmarkGEMMKernel(b *testing.B) {
	const k = 256
	r := rand.New(rand.NewPCG(1, 2))
	a, bb := benchF32(r, 6*k*24), benchF32(r, 16*k)
	c := make([]float32, 6*24*16)
	kerns := map[string]func(int, []float32, []float32, []float32, int, float32, int){"go": sgemmGo}
	asm, _ := sgemmAsmKernels()
	for _, kn := range asm {
		if kn.mr == 6 && kn.nr == 16 {
			kerns[kn.name] = kn.full
		}
	}
	for name, kn := range kerns {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				for i := range 24 {
					kn(k, a[i*6*k:], bb, c[i*6*16:], 16, 0, 1)
				}
			}
			b.ReportMetric(2*6*16*k*24*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkGEMMDepth times the float32 GEMM with the kernel's depth
// blocking (kcFor's even slices of up to kc) and with the blocking it
// replaced (xKC192: fixed slices of 192, a short last one), in turn in
// one loop, on 1024³, 2048³ and ResNet-18's forward conv GEMMs. Run it
// with -test.cpu 1: the product then runs on the calling goroutine,
// which is locked to its thread, and each call is timed by that thread's
// processor time (wall time where the system cannot tell), so that
// other processes on a shared machine do not count. It reports the
// current blocking's GFLOP/s at its median and the old one's median time
// over the current one's.
func BenchmarkGEMMDepth(b *testing.B) {
	base := sgemm
	defer func() { sgemm, gemmEvenDepth = base, true }()
	set := func(i int) {
		sgemm, gemmEvenDepth = base, i == 0
		if i == 1 {
			sgemm.kc = 192
		}
	}
	shapes := append([]gemmBench{{name: "1024", m: 1024, n: 1024, k: 1024}, {name: "2048", m: 2048, n: 2048, k: 2048}}, resnet18GemmShapes[:4]...)
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range shapes {
		g, la, lb, lc := s.args()
		x, y, c := benchF32(r, la), benchF32(r, lb), make([]float32, lc)
		b.Run(s.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			clock := cputime.Thread
			if clock() == 0 {
				clock = func() time.Duration { return time.Duration(time.Now().UnixNano()) }
			}
			var ts [2][]float64
			for n := 0; b.Loop(); n++ {
				for v := range 2 {
					i := (n + v) % 2
					set(i)
					t0 := clock()
					Gemm(g, x, y, c)
					ts[i] = append(ts[i], float64(clock()-t0))
				}
			}
			set(0)
			b.ReportMetric(s.flops()/median(ts[0]), "GFLOP/s")
			b.ReportMetric(median(ts[1])/median(ts[0]), "xKC192")
		})
	}
}

// median is the middle value of xs (sorted in place).
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}
