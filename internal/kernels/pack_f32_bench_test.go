package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// resnet18GemmShapes are the GEMMs of the ResNet-18 convolutions on 3×32×32
// at batch 32 (bench/step_bench_test.go), one per stage and pass as the
// convolution driver cuts them (conv_job.go's plan): the forward product
// w·col (M=K_out, K=C·9, N=a band of pixels), the input gradient wᵀ·dy
// and the weight gradient dy·colᵀ (K a band, N a block of C·9); then the
// 1024³ square in each layout.
var resnet18GemmShapes = []gemmBench{
	{name: "fwd_64x256x576", m: 64, n: 256, k: 576},
	{name: "fwd_128x256x1152", m: 128, n: 256, k: 1152},
	{name: "fwd_256x64x2304", m: 256, n: 64, k: 2304},
	{name: "fwd_512x16x4608", m: 512, n: 16, k: 4608},
	{name: "dgrad_576x256x64", ta: true, m: 576, n: 256, k: 64},
	{name: "dgrad_1152x256x128", ta: true, m: 1152, n: 256, k: 128},
	{name: "dgrad_2304x64x256", ta: true, m: 2304, n: 64, k: 256},
	{name: "dgrad_4608x16x512", ta: true, m: 4608, n: 16, k: 512},
	{name: "wgrad_64x576x256", tb: true, m: 64, n: 576, k: 256},
	{name: "wgrad_128x144x256", tb: true, m: 128, n: 144, k: 256},
	{name: "wgrad_256x288x64", tb: true, m: 256, n: 288, k: 64},
	{name: "wgrad_512x576x16", tb: true, m: 512, n: 576, k: 16},
	{name: "1024", m: 1024, n: 1024, k: 1024},
	{name: "1024_tn", ta: true, m: 1024, n: 1024, k: 1024},
	{name: "1024_nt", tb: true, m: 1024, n: 1024, k: 1024},
}

// goPackers is kn with the Go packers of its shape in place of its own
// (what the AVX-512 kernel ran before it had assembly packers): the twin
// full-panel packers for op(A) = A and op(B) = Bᵀ, the generic loops for
// the other two.
func goPackers(kn gemmKernel[float32]) gemmKernel[float32] {
	kn.name += "/gopack"
	kn.packAT, kn.packB = nil, nil
	kn.packA, kn.packBT = packRows6[float32], packCols16[float32]
	if kn.mr == 12 {
		kn.packA, kn.packBT = packRows12[float32], packCols32[float32]
	}
	return kn
}

// BenchmarkGEMMPacking measures the blocked float32 GEMM at
// resnet18GemmShapes on this CPU's widest kernel with its packers
// ("asm"), with the Go packers ("gopack"), and with other block sizes
// (mcM_kcK_ncN). The variants of a shape run in turn in one loop, each
// keeping its best time, so that a busy machine slows them alike: it
// reports asm's GFLOP/s and each other variant's time over asm's.
func BenchmarkGEMMPacking(b *testing.B) {
	asm, why := sgemmAsmKernels()
	if len(asm) == 0 {
		b.Skip(why)
	}
	kn := asm[0]
	names, variants := []string{"asm", "gopack"}, []gemmKernel[float32]{kn, goPackers(kn)}
	for _, bl := range [][3]int{{2 * kn.mc, kn.kc, kn.nc}, {kn.mc, kn.kc * 4 / 3, kn.nc},
		{2 * kn.mc, kn.kc * 4 / 3, kn.nc}, {kn.mc, 2 * kn.kc, kn.nc}, {kn.mc, kn.kc, 2 * kn.nc}} {
		v := kn
		v.mc, v.kc, v.nc = bl[0], bl[1], bl[2]
		names, variants = append(names, fmt.Sprintf("mc%d_kc%d_nc%d", bl[0], bl[1], bl[2])), append(variants, v)
	}
	for _, s := range resnet18GemmShapes {
		b.Run(s.name, func(b *testing.B) {
			g, la, lb, lc := s.args()
			r := rand.New(rand.NewPCG(1, 2))
			x, y, c := benchF32(r, la), benchF32(r, lb), make([]float32, lc)
			var jobs freeList[gemmJob[float32]]
			best := make([]time.Duration, len(variants))
			for i := range variants {
				gemmBlocked(&variants[i], &jobs, g, operand[float32]{f: x}, operand[float32]{f: y}, c)
				best[i] = time.Duration(1 << 62)
			}
			for n := 0; b.Loop(); n++ { // a new variant first each round
				for v := range variants {
					i := (n + v) % len(variants)
					t0 := time.Now()
					gemmBlocked(&variants[i], &jobs, g, operand[float32]{f: x}, operand[float32]{f: y}, c)
					best[i] = min(best[i], time.Since(t0))
				}
			}
			b.ReportMetric(s.flops()/best[0].Seconds()/1e9, "asmGFLOP/s")
			for i := 1; i < len(variants); i++ {
				b.ReportMetric(float64(best[i])/float64(best[0]), "x"+names[i])
			}
		})
	}
}

// BenchmarkPackers times packA and packB alone on a 240×192 block of op(A)
// and a 192×256 block of op(B), both orientations, with rows ld floats
// apart (dense, and 1024 as the weight gradient's dy), on this CPU's
// widest kernel and on its Go packers alternately, best of each: it
// reports GB/s packed by the assembly and the Go packers' time over it.
func BenchmarkPackers(b *testing.B) {
	asm, why := sgemmAsmKernels()
	if len(asm) == 0 {
		b.Skip(why)
	}
	kn := asm[0]
	kns := []gemmKernel[float32]{kn, goPackers(kn)}
	const mc, kc, nc = 240, 192, 256
	for _, side := range []string{"A", "B"} {
		for _, trans := range []bool{false, true} {
			for _, ld := range []int{0, 1024} {
				b.Run(fmt.Sprintf("%s/trans=%v/ld=%d", side, trans, ld), func(b *testing.B) {
					r := rand.New(rand.NewPCG(1, 2))
					w := max(mc, kc, nc, ld)
					src := operand[float32]{f: benchF32(r, w*w)}
					if ld == 0 { // dense: rows of op(A) = A and op(B) = Bᵀ are kc long
						ld = map[bool]int{false: kc, true: mc}[trans]
						if side == "B" {
							ld = map[bool]int{false: nc, true: kc}[trans]
						}
					}
					dst := make([]float32, max(mc, nc)*kc)
					pack := func(k *gemmKernel[float32]) {
						if side == "A" {
							packA(k, dst, src, 0, ld, trans, 0, mc, 0, kc, 1.5, nil)
						} else {
							packB(k, dst, src, 0, ld, trans, 0, kc, 0, nc, nil)
						}
					}
					best := []time.Duration{1 << 62, 1 << 62}
					for b.Loop() {
						for i := range kns {
							t0 := time.Now()
							pack(&kns[i])
							best[i] = min(best[i], time.Since(t0))
						}
					}
					n := mc
					if side == "B" {
						n = nc
					}
					b.ReportMetric(float64(4*n*kc)/best[0].Seconds()/1e9, "asmGB/s")
					b.ReportMetric(float64(best[1])/float64(best[0]), "xgopack")
				})
			}
		}
	}
}
