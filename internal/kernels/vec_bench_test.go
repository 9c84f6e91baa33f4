package kernels

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// BenchmarkVec measures the contiguous memory-bound kernels on float32
// runs, with the assembly ("asm") and with the pure-Go loops ("go"), both
// split across the worker pool, next to a plain Go copy of the same run
// length on one goroutine ("copy"). Bytes are those the kernel reads plus
// those it writes (copy: 2·4n; add: 3·4n; fill: 4n; sum: 4n; AdamUpdate:
// 7·4n), so the GB/s of a kernel over the GB/s of copy is its fraction of
// copy bandwidth. n = 16M elements (64 MiB per array) is far beyond the
// 32 MiB L3; n = 256K (1 MiB) stays in cache.
func BenchmarkVec(b *testing.B) {
	for _, n := range []int{1 << 18, 1 << 24} {
		x, y, z, m, v := vecBenchData(n)
		sz := "/n=" + strconv.Itoa(n)
		b.Run("copy"+sz, func(b *testing.B) {
			b.SetBytes(8 * int64(n))
			for b.Loop() {
				copy(z, x)
			}
		})
		for _, k := range vecBenchKernels(x, y, z, m, v) {
			for _, asm := range []bool{true, false} {
				name := "asm"
				if !asm {
					name = "go"
				}
				b.Run(k.name+"/"+name+sz, func(b *testing.B) {
					b.SetBytes(k.bytes * int64(n))
					if !asm {
						saved := CPU
						CPU = Features{}
						defer func() { CPU = saved }()
					}
					for b.Loop() {
						k.f()
					}
				})
			}
		}
	}
}

func vecBenchData(n int) (x, y, z, m, v []float32) {
	r := rand.New(rand.NewPCG(1, 2))
	x, y, z = make([]float32, n), make([]float32, n), make([]float32, n)
	m, v = make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	return
}

type vecBenchKernel struct {
	name  string
	bytes int64 // read plus written, per element
	f     func()
}

func vecBenchKernels(x, y, z, m, v []float32) []vecBenchKernel {
	l := Layout{Shape: []int{len(x)}}
	return []vecBenchKernel{
		{"add", 12, func() { Binary(BAdd, z, l, x, l, y, l) }},
		{"sub", 12, func() { Binary(BSub, z, l, x, l, y, l) }},
		{"mul", 12, func() { Binary(BMul, z, l, x, l, y, l) }},
		{"axpy", 12, func() { Axpy(1e-3, x, l, z, 0) }},
		{"scale", 8, func() { Unary(UScale, 0.5, z, l, x, l) }},
		{"relu", 8, func() { Unary(URelu, 0, z, l, x, l) }},
		{"relugrad", 12, func() { UnaryGrad(URelu, 0, z, x, nil, y) }},
		{"fill", 4, func() { Fill(z, l, float32(1.5)) }},
		{"sum", 4, func() { sumRun(x) }},
		{"adam", 28, func() {
			AdamUpdate(z, x, m, v, AdamUpdateArgs{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Step: 1, Decoupled: true})
		}},
	}
}

// BenchmarkVecVsCopy alternates each kernel with a plain Go copy of the
// same length (16M float32, beyond the cache) and reports the best
// bandwidth of each over all iterations (GB/s read plus written) and
// their ratio, "xcopy": the kernel's fraction of copy bandwidth. Taking
// the best of alternating runs keeps the ratio meaningful on a machine
// whose memory bandwidth other work shares.
func BenchmarkVecVsCopy(b *testing.B) {
	const n = 1 << 24
	x, y, z, m, v := vecBenchData(n)
	c := make([]float32, n)
	for _, k := range vecBenchKernels(x, y, z, m, v) {
		b.Run(k.name, func(b *testing.B) {
			bestK, bestC := time.Duration(1<<62), time.Duration(1<<62)
			for b.Loop() {
				t0 := time.Now()
				copy(c, x)
				t1 := time.Now()
				k.f()
				t2 := time.Now()
				bestC, bestK = min(bestC, t1.Sub(t0)), min(bestK, t2.Sub(t1))
			}
			kGBs := float64(k.bytes*n) / bestK.Seconds() / 1e9
			cGBs := float64(8*n) / bestC.Seconds() / 1e9
			b.ReportMetric(kGBs, "GB/s")
			b.ReportMetric(cGBs, "copyGB/s")
			b.ReportMetric(kGBs/cGBs, "xcopy")
		})
	}
}
