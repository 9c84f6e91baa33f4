package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/internal/cputime"
)

// convBench is one benchmarked convolution with its operands.
type convBench struct {
	name                    string
	p                       ConvArgs
	x, w, y, dy, dx, dw, ws []float32
}

// conv3x3 returns the 3×3, padding-1 convolution of batch n from h×h×c to
// k channels with the given stride.
func conv3x3(n, h, c, k, stride int) ConvArgs {
	p := ConvArgs{N: n, C: c, H: h, W: h, K: k, R: 3, S: 3, StrideH: stride, StrideW: stride,
		PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 1}
	p.OH, p.OW = (h-1)/stride+1, (h-1)/stride+1
	return p
}

// flops is one pass's 2·N·K·(C/G)·R·S·OH·OW.
func (c *convBench) flops() float64 {
	p := c.p
	return 2 * float64(p.N*p.K*p.C/p.Groups*p.R*p.S*p.OH*p.OW)
}

func (c *convBench) alloc(r *rand.Rand) {
	p := c.p
	if c.x != nil {
		return
	}
	c.x = benchF32(r, p.N*p.C*p.H*p.W)
	c.w = benchF32(r, p.K*p.C/p.Groups*p.R*p.S)
	c.dy = benchF32(r, p.N*p.K*p.OH*p.OW)
	c.y, c.dx, c.dw = make([]float32, len(c.dy)), make([]float32, len(c.x)), make([]float32, len(c.w))
	c.ws = make([]float32, convMaxWS(p))
}

func (c *convBench) forward()    { Conv2d(c.p, c.y, c.x, c.w, c.ws) }
func (c *convBench) gradInput()  { Conv2dGradInput(c.p, c.dx, c.dy, c.w, c.ws) }
func (c *convBench) gradWeight() { Conv2dGradWeight(c.p, c.dw, c.dy, c.x, c.ws) }
func (c *convBench) all()        { c.forward(); c.gradInput(); c.gradWeight() }

// resnet18Convs are ResNet-18's 3×3 convolutions at batch n: the stride-1
// convolution of each stage and the stride-2 one that enters it.
func resnet18Convs(n int) []*convBench { return resnetStages(n, 56) }

// resnetStages are ResNet-18's 3×3 convolutions at batch n over h×h
// planes entering the first stage: the stride-1 convolution of each stage
// (64, 128, 256, 512 channels) and the stride-2 one that enters the next.
func resnetStages(n, h int) []*convBench {
	var cs []*convBench
	for c := 64; ; c, h = 2*c, h/2 {
		cs = append(cs, &convBench{name: fmt.Sprintf("%dx%dx%d-%d", h, h, c, c), p: conv3x3(n, h, c, c, 1)})
		if c == 512 {
			return cs
		}
		cs = append(cs, &convBench{name: fmt.Sprintf("s2_%dx%dx%d-%d", h, h, c, 2*c), p: conv3x3(n, h, c, 2*c, 2)})
	}
}

// smallResNetConvs are the convolutions of nn.SmallResNet on MNIST at
// batch n (examples/resnet): stem, one basic block per stage, and the
// stride-2 1×1 shortcuts.
func smallResNetConvs(n int) []*convBench {
	return []*convBench{
		{name: "stem_28x28x1-16", p: conv3x3(n, 28, 1, 16, 1)},
		{name: "28x28x16-16", p: conv3x3(n, 28, 16, 16, 1)},
		{name: "s2_28x28x16-32", p: conv3x3(n, 28, 16, 32, 2)},
		{name: "14x14x32-32", p: conv3x3(n, 14, 32, 32, 1)},
		{name: "s2_14x14x32-64", p: conv3x3(n, 14, 32, 64, 2)},
		{name: "7x7x64-64", p: conv3x3(n, 7, 64, 64, 1)},
		{name: "1x1s2_28x28x16-32", p: shortcut(n, 28, 16, 32)},
		{name: "1x1s2_14x14x32-64", p: shortcut(n, 14, 32, 64)},
	}
}

// BenchmarkConv measures GFLOP/s (2·N·K·C·R·S·OH·OW per pass, the same
// for each of the three; mean, and bestGFLOP/s from the fastest
// iteration, the steadier figure on a shared machine; GFLOP/cpu-s divides
// by the processor time the process used instead, the work per core-second
// whatever else runs) of the convolution kernels on all workers:
// ResNet-18's 3×3 layers at batch 32 (resnet18/…) and SmallResNet's at
// batch 128 (small/…), each pass alone and fwd+bwd (all three). The
// vs_gemm sub-benchmarks alternate one fwd+bwd of every layer of a set
// with BenchmarkGEMM's f32/1024 product and report the best GFLOP/s of
// each over all iterations and their ratio, xGEMM: the target is
// xGEMM ≥ 0.5 for resnet18.
func BenchmarkConv(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	sets := []struct {
		name   string
		layers []*convBench
	}{{"resnet18", resnet18Convs(32)}, {"small", smallResNetConvs(128)}}
	for _, set := range sets {
		for _, c := range set.layers {
			passes := []struct {
				name  string
				f     func()
				count float64
			}{{"fwd", c.forward, 1}, {"dgrad", c.gradInput, 1}, {"wgrad", c.gradWeight, 1}, {"all", c.all, 3}}
			for _, pass := range passes {
				b.Run(fmt.Sprintf("%s/%s/%s", set.name, c.name, pass.name), func(b *testing.B) {
					c.alloc(r)
					pass.f()
					best := time.Duration(1 << 62)
					cpu0 := cputime.Process()
					for b.Loop() {
						t0 := time.Now()
						pass.f()
						best = min(best, time.Since(t0))
					}
					flops := pass.count * c.flops()
					b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					b.ReportMetric(flops/best.Seconds()/1e9, "bestGFLOP/s")
					if cpu := cputime.Process() - cpu0; cpu > 0 {
						b.ReportMetric(flops*float64(b.N)/cpu.Seconds()/1e9, "GFLOP/cpu-s")
					}
				})
			}
		}
		b.Run(set.name+"/vs_gemm", func(b *testing.B) {
			g, la, lb, lc := gemmBench{m: 1024, n: 1024, k: 1024}.args()
			ga, gb, gc := benchF32(r, la), benchF32(r, lb), make([]float32, lc)
			var flops float64
			for _, c := range set.layers {
				c.alloc(r)
				flops += 3 * c.flops()
			}
			bestC, bestG := time.Duration(1<<62), time.Duration(1<<62)
			for b.Loop() {
				t0 := time.Now()
				for _, c := range set.layers {
					c.all()
				}
				t1 := time.Now()
				Gemm(g, ga, gb, gc)
				t2 := time.Now()
				bestC, bestG = min(bestC, t1.Sub(t0)), min(bestG, t2.Sub(t1))
			}
			conv := flops / bestC.Seconds() / 1e9
			gemm := 2 * 1024 * 1024 * 1024 / bestG.Seconds() / 1e9
			b.ReportMetric(conv, "GFLOP/s")
			b.ReportMetric(gemm, "gemmGFLOP/s")
			b.ReportMetric(conv/gemm, "xGEMM")
		})
	}
}
