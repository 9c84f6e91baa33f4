package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
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
		cpu0 := cpuTime()
		for b.Loop() {
			t0 := time.Now()
			f()
			best = min(best, time.Since(t0))
		}
		cpu = cpuTime() - cpu0
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
