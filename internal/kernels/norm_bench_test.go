package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/internal/cputime"
)

// BenchmarkNorm measures batch norm (training) and layer norm, forward
// and backward, on float32 activations of SmallResNet at batch 128
// (examples/resnet), ResNet-18's first stage at batch 32 and a GPT-2-small
// layer norm over 4096 tokens. GB/s counts the bytes a pass must move
// once (forward: x read, y written; backward: dy and x read, dx written),
// from the mean, from the fastest iteration (bestGB/s) and per second of
// processor time the process used (GB/cpu-s).
func BenchmarkNorm(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	var cpu time.Duration
	report := func(b *testing.B, best time.Duration, bytes int) {
		b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		b.ReportMetric(float64(bytes)/best.Seconds()/1e9, "bestGB/s")
		if cpu > 0 {
			b.ReportMetric(float64(bytes)*float64(b.N)/cpu.Seconds()/1e9, "GB/cpu-s")
		}
	}
	timed := func(b *testing.B, f func()) time.Duration {
		f()
		best := time.Duration(1 << 62)
		cpu0 := cputime.Process()
		for b.Loop() {
			t0 := time.Now()
			f()
			best = min(best, time.Since(t0))
		}
		cpu = cputime.Process() - cpu0
		return best
	}
	for _, s := range [][3]int{{128, 16, 784}, {128, 32, 196}, {128, 64, 49}, {32, 64, 3136}} {
		n, c, hw := s[0], s[1], s[2]
		size := n * c * hw
		x, dy := benchF32(r, size), benchF32(r, size)
		y, dx := make([]float32, size), make([]float32, size)
		w, bb := benchF32(r, c), benchF32(r, c)
		rm, rv, mean, is, dw, db := make([]float32, c), make([]float32, c), make([]float32, c), make([]float32, c), make([]float32, c), make([]float32, c)
		for i := range rv {
			rv[i] = 1
		}
		name := fmt.Sprintf("batch/%dx%dx%d", n, c, hw)
		b.Run(name+"/fwd", func(b *testing.B) {
			report(b, timed(b, func() { BatchNorm(y, x, w, bb, rm, rv, mean, is, n, c, hw, true, 0.1, 1e-5) }), 8*size)
		})
		b.Run(name+"/bwd", func(b *testing.B) {
			BatchNorm(y, x, w, bb, rm, rv, mean, is, n, c, hw, true, 0.1, 1e-5)
			report(b, timed(b, func() { BatchNormGrad(dx, dw, db, dy, x, w, mean, is, n, c, hw, true) }), 12*size)
		})
	}
	for _, s := range [][2]int{{4096, 768}} {
		rows, cols := s[0], s[1]
		size := rows * cols
		x, dy := benchF32(r, size), benchF32(r, size)
		y, dx := make([]float32, size), make([]float32, size)
		w, bb, dw, db := benchF32(r, cols), benchF32(r, cols), make([]float32, cols), make([]float32, cols)
		mean, rstd := make([]float32, rows), make([]float32, rows)
		name := fmt.Sprintf("layer/%dx%d", rows, cols)
		b.Run(name+"/fwd", func(b *testing.B) {
			report(b, timed(b, func() { LayerNorm(y, x, w, bb, mean, rstd, rows, cols, 1e-5) }), 8*size)
		})
		b.Run(name+"/bwd", func(b *testing.B) {
			LayerNorm(y, x, w, bb, mean, rstd, rows, cols, 1e-5)
			report(b, timed(b, func() { LayerNormGrad(dx, dw, db, dy, x, w, mean, rstd, rows, cols) }), 12*size)
		})
	}
}

// BenchmarkBatchNormRelu times eval batch norm followed by ReLU on
// ResNet-18's first-stage activations (32×64×32×32), as two passes
// ("unfused": BatchNorm then the ReLU kernel) and as one ("fused"), on
// float32 and on bfloat16 (x and y; the per-channel operands float32),
// and the bfloat16 batch norm alone as the tile path ran it ("bf16/tiles":
// x widened to float32, the float32 kernel, y rounded back) and in
// registers ("bf16/register"). MB/s counts x read and y written once.
func BenchmarkBatchNormRelu(b *testing.B) {
	const n, c, hw = 32, 64, 32 * 32
	size := n * c * hw
	r := rand.New(rand.NewPCG(3, 4))
	x, w, bb := benchF32(r, size), benchF32(r, c), benchF32(r, c)
	y := make([]float32, size)
	rm, rv, mean, is := make([]float32, c), make([]float32, c), make([]float32, c), make([]float32, c)
	for i := range rv {
		rv[i] = 1
	}
	xh, yh := make([]uint16, size), make([]uint16, size)
	F32ToBF16(xh, x)
	run := func(name string, bytes int, f func()) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(bytes))
			for b.Loop() {
				f()
			}
		})
	}
	run("f32/unfused", 8*size, func() {
		BatchNorm(y, x, w, bb, rm, rv, mean, is, n, c, hw, false, 0.1, 1e-5)
		reluRun(y, y)
	})
	run("f32/fused", 8*size, func() { BatchNormRelu(y, x, w, bb, rm, rv, mean, is, n, c, hw, false, 0.1, 1e-5) })
	run("bf16/unfused", 4*size, func() {
		BatchNormBF16(yh, xh, w, bb, rm, rv, mean, is, n, c, hw, false, false, 0.1, 1e-5)
		ReluHalf(yh, yh, true)
	})
	run("bf16/fused", 4*size, func() { BatchNormBF16(yh, xh, w, bb, rm, rv, mean, is, n, c, hw, false, true, 0.1, 1e-5) })
	run("bf16/tiles", 4*size, func() {
		xw := make([]float32, size)
		BF16ToF32(xw, xh)
		BatchNorm(y, xw, w, bb, rm, rv, mean, is, n, c, hw, false, 0.1, 1e-5)
		F32ToBF16(yh, y)
	})
	run("bf16/register", 4*size, func() { BatchNormBF16(yh, xh, w, bb, rm, rv, mean, is, n, c, hw, false, false, 0.1, 1e-5) })
}
