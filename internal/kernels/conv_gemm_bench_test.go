package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/dtype"
)

// cifarResNet18Convs are the convolutions of ResNet-18 with the small
// stem on 3×32×32 images (bench/step_bench_test.go's workload) at batch
// n: the stem (3 input channels), each stage's stride-1 3×3 convolution
// and the stride-2 one entering it, then the 1×1 stride-2 shortcuts.
func cifarResNet18Convs(n int) []*convBench {
	stem := &convBench{name: "stem_32x32x3-64", p: conv3x3(n, 32, 3, 64, 1)}
	return append(append([]*convBench{stem}, resnetStages(n, 32)...),
		&convBench{name: "1x1s2_32x32x64-128", p: shortcut(n, 32, 64, 128)},
		&convBench{name: "1x1s2_16x16x128-256", p: shortcut(n, 16, 128, 256)},
		&convBench{name: "1x1s2_8x8x256-512", p: shortcut(n, 8, 256, 512)})
}

// shortcut returns the unpadded 1×1 stride-2 convolution of batch n from
// h×h×c to k channels (ResNet's downsampling shortcut).
func shortcut(n, h, c, k int) ConvArgs { return pointwise(n, h, c, k, 2) }

// toBF16 rounds v to bfloat16 bits.
func toBF16(v []float32) Half16 {
	bits := make([]uint16, len(v))
	for i, x := range v {
		bits[i] = dtype.BF16FromF32(x)
	}
	return Half16{Bits: bits, BF16: true}
}

// convPassFuncs returns the three passes of c (fwd, dgrad, wgrad) in F32,
// or on bfloat16 operands and outputs when bf16.
func convPassFuncs(c *convBench, bf16 bool) [3]func() {
	if !bf16 {
		return [3]func(){c.forward, c.gradInput, c.gradWeight}
	}
	p := c.p
	x, w, dy := toBF16(c.x), toBF16(c.w), toBF16(c.dy)
	y, dx, dw := toBF16(c.y), toBF16(c.dx), toBF16(c.dw)
	ws := c.ws
	return [3]func(){
		func() { Conv2dHalf(p, ConvOut{H: y}, x, w, ws) },
		func() { Conv2dGradInputHalf(p, ConvOut{H: dx}, dy, w, ws) },
		func() { Conv2dGradWeightHalf(p, ConvOut{H: dw}, dy, x, ws) },
	}
}

// sameFlopGemm returns a GEMM of c's im2col shape, M = K, N = N·OH·OW,
// K = C/G·R·S (G = 1): the FLOPs of one pass, in F32 or bfloat16.
func sameFlopGemm(r *rand.Rand, c *convBench, bf16 bool) func() {
	p := c.p
	m, n, k := p.K, p.N*p.OH*p.OW, p.C/p.Groups*p.R*p.S
	g := GemmArgs{M: m, N: n, K: k, Alpha: 1, LdA: k, LdB: n, LdC: n}
	a, b, out := benchF32(r, m*k), benchF32(r, k*n), make([]float32, m*n)
	if !bf16 {
		return func() { Gemm(g, a, b, out) }
	}
	ha, hb := toBF16(a), toBF16(b)
	return func() { GemmHalf(g, ha.Bits, hb.Bits, true, true, out) }
}

// BenchmarkConvVsGemm times each pass of ResNet-18's convolutions (the
// small-stem 32×32 model at batch 32, cifarResNet18Convs) alternately with a GEMM of the
// same FLOPs (sameFlopGemm), in F32 and on bfloat16, and reports the best
// GFLOP/s of each over the iterations (steadier on a shared machine) and
// their ratio xGEMM; the target is xGEMM ≥ 0.7 for every pass of the 3×3
// layers. Names are
// key=value for benchstat.
func BenchmarkConvVsGemm(b *testing.B) { convVsGemm(b, cifarResNet18Convs(32)) }

// BenchmarkConvVsGemmResNet50 is BenchmarkConvVsGemm over ResNet-50's 1×1
// convolutions (small stem, 32×32, batch 32: cifarResNet50Pointwise).
func BenchmarkConvVsGemmResNet50(b *testing.B) { convVsGemm(b, cifarResNet50Pointwise(32)) }

// cifarResNet50Pointwise are the 1×1 convolutions of ResNet-50's
// bottlenecks with the small stem on 3×32×32 images at batch n: per stage
// (32, 16, 8, 4 pixels square, width w = 64…512), the reduction from 4w,
// the expansion to 4w and the stride-2 shortcut entering the stage (the
// first stage's is stride 1, from 64 channels).
func cifarResNet50Pointwise(n int) []*convBench {
	var cs []*convBench
	for h, w := 32, 64; w <= 512; h, w = h/2, 2*w {
		cs = append(cs,
			&convBench{name: fmt.Sprintf("1x1_%dx%dx%d-%d", h, h, 4*w, w), p: pointwise(n, h, 4*w, w, 1)},
			&convBench{name: fmt.Sprintf("1x1_%dx%dx%d-%d", h, h, w, 4*w), p: pointwise(n, h, w, 4*w, 1)})
		if w > 64 {
			cs = append(cs, &convBench{name: fmt.Sprintf("1x1s2_%dx%dx%d-%d", 2*h, 2*h, 2*w, 4*w), p: pointwise(n, 2*h, 2*w, 4*w, 2)})
		}
	}
	return cs
}

// pointwise returns the unpadded 1×1 convolution of batch n from h×h×c to
// k channels with the given stride.
func pointwise(n, h, c, k, stride int) ConvArgs {
	p := ConvArgs{N: n, C: c, H: h, W: h, K: k, R: 1, S: 1, StrideH: stride, StrideW: stride, DilH: 1, DilW: 1, Groups: 1}
	p.OH, p.OW = (h-1)/stride+1, (h-1)/stride+1
	return p
}

// convVsGemm runs BenchmarkConvVsGemm's comparison over convs.
func convVsGemm(b *testing.B, convs []*convBench) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range convs {
		for _, bf16 := range []bool{false, true} {
			dt := map[bool]string{false: "f32", true: "bf16"}[bf16]
			var passes [3]func()
			var gemm func()
			for i, name := range []string{"fwd", "dgrad", "wgrad"} {
				b.Run(fmt.Sprintf("layer=%s/dtype=%s/pass=%s", c.name, dt, name), func(b *testing.B) {
					if gemm == nil {
						c.alloc(r)
						passes, gemm = convPassFuncs(c, bf16), sameFlopGemm(r, c, bf16)
					}
					f := passes[i]
					f()
					gemm()
					bestC, bestG := time.Duration(1<<62), time.Duration(1<<62)
					for b.Loop() {
						t0 := time.Now()
						f()
						t1 := time.Now()
						gemm()
						bestC, bestG = min(bestC, t1.Sub(t0)), min(bestG, time.Since(t1))
					}
					conv, gm := c.flops()/bestC.Seconds()/1e9, c.flops()/bestG.Seconds()/1e9
					b.ReportMetric(conv, "GFLOP/s")
					b.ReportMetric(gm, "gemmGFLOP/s")
					b.ReportMetric(conv/gm, "xGEMM")
				})
			}
		}
	}
}
