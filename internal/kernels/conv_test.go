package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// refConv computes y, and the gradients dx and dw for a given dy, with the
// convolution's definition written as plain nested loops in float64.
func refConv(p ConvArgs, x, w, dy []float64) (y, dx, dw []float64) {
	cg, kg := p.C/p.Groups, p.K/p.Groups
	y = make([]float64, p.N*p.K*p.OH*p.OW)
	dx = make([]float64, len(x))
	dw = make([]float64, len(w))
	for n := range p.N {
		for k := range p.K {
			g := k / kg
			for oh := range p.OH {
				for ow := range p.OW {
					yi := ((n*p.K+k)*p.OH+oh)*p.OW + ow
					for c := range cg {
						ci := g*cg + c
						for r := range p.R {
							for s := range p.S {
								ih := oh*p.StrideH - p.PadH + r*p.DilH
								iw := ow*p.StrideW - p.PadW + s*p.DilW
								if ih < 0 || ih >= p.H || iw < 0 || iw >= p.W {
									continue
								}
								xi := ((n*p.C+ci)*p.H+ih)*p.W + iw
								wi := ((k*cg+c)*p.R+r)*p.S + s
								y[yi] += x[xi] * w[wi]
								dx[xi] += dy[yi] * w[wi]
								dw[wi] += dy[yi] * x[xi]
							}
						}
					}
				}
			}
		}
	}
	return y, dx, dw
}

func randConv(rng *rand.Rand) ConvArgs {
	for {
		g := 1 + rng.IntN(3)
		p := ConvArgs{
			N: 1 + rng.IntN(3), C: g * (1 + rng.IntN(3)), H: 1 + rng.IntN(8), W: 1 + rng.IntN(8),
			K: g * (1 + rng.IntN(3)), R: 1 + rng.IntN(4), S: 1 + rng.IntN(4),
			StrideH: 1 + rng.IntN(3), StrideW: 1 + rng.IntN(3), PadH: rng.IntN(3), PadW: rng.IntN(3),
			DilH: 1 + rng.IntN(2), DilW: 1 + rng.IntN(2), Groups: g,
		}
		if rng.IntN(5) == 0 { // pointwise
			p.R, p.S, p.StrideH, p.StrideW, p.PadH, p.PadW = 1, 1, 1, 1, 0, 0
		}
		nh := p.H + 2*p.PadH - p.DilH*(p.R-1) - 1
		nw := p.W + 2*p.PadW - p.DilW*(p.S-1) - 1
		if nh < 0 || nw < 0 {
			continue
		}
		p.OH, p.OW = nh/p.StrideH+1, nw/p.StrideW+1
		return p
	}
}

func randSlice(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 2*rng.Float64() - 1
	}
	return v
}

func to32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func nanSlice[T Float](n int) []T {
	v := make([]T, n)
	for i := range v {
		v[i] = T(math.NaN())
	}
	return v
}

// within reports the first index where got and want differ by more than
// tol·(1+|want|), or -1.
func within[T Float](got []T, want []float64, tol float64) int {
	for i := range want {
		d := math.Abs(float64(got[i]) - want[i])
		if !(d <= tol*(1+math.Abs(want[i]))) {
			return i
		}
	}
	return -1
}

// runConv runs the three kernels in T on outputs and workspace prefilled
// with NaN (so that every element must be written) and compares them with
// the reference.
func runConv[T Float](t *testing.T, p ConvArgs, x, w, dy []float64, conv func([]float64) []T, tol float64) {
	t.Helper()
	ry, rdx, rdw := refConv(p, x, w, dy)
	y, dx, dw := nanSlice[T](len(ry)), nanSlice[T](len(x)), nanSlice[T](len(w))
	Conv2d(p, y, conv(x), conv(w), convWS[T](ConvForward, p))
	if i := within(y, ry, tol); i >= 0 {
		t.Errorf("Conv2d %+v: y[%d] = %v, want %v", p, i, y[i], ry[i])
	}
	Conv2dGradInput(p, dx, conv(dy), conv(w), convWS[T](ConvGradInput, p))
	if i := within(dx, rdx, tol); i >= 0 {
		t.Errorf("Conv2dGradInput %+v: dx[%d] = %v, want %v", p, i, dx[i], rdx[i])
	}
	Conv2dGradWeight(p, dw, conv(dy), conv(x), convWS[T](ConvGradWeight, p))
	if i := within(dw, rdw, tol); i >= 0 {
		t.Errorf("Conv2dGradWeight %+v: dw[%d] = %v, want %v", p, i, dw[i], rdw[i])
	}
}

func TestConv2dKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fixed := []ConvArgs{
		{N: 1, C: 1, H: 1, W: 1, K: 1, R: 1, S: 1, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1, Groups: 1},
		{N: 2, C: 4, H: 5, W: 3, K: 6, R: 1, S: 1, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1, Groups: 2},                   // pointwise, grouped
		{N: 2, C: 3, H: 7, W: 6, K: 3, R: 3, S: 2, StrideH: 2, StrideW: 1, PadH: 1, PadW: 1, DilH: 2, DilW: 1, Groups: 3}, // depthwise
		{N: 1, C: 2, H: 4, W: 4, K: 2, R: 1, S: 1, StrideH: 2, StrideW: 2, DilH: 1, DilW: 1, Groups: 1},                   // 1×1 strided: im2col
		{N: 1, C: 1, H: 2, W: 2, K: 1, R: 3, S: 3, StrideH: 1, StrideW: 1, PadH: 2, PadW: 2, DilH: 1, DilW: 1, Groups: 1},
	}
	var cases []ConvArgs
	for _, p := range fixed {
		p.OH = (p.H+2*p.PadH-p.DilH*(p.R-1)-1)/p.StrideH + 1
		p.OW = (p.W+2*p.PadW-p.DilW*(p.S-1)-1)/p.StrideW + 1
		cases = append(cases, p)
	}
	for range 60 {
		cases = append(cases, randConv(rng))
	}
	for i, p := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			x := randSlice(rng, p.N*p.C*p.H*p.W)
			w := randSlice(rng, p.K*p.C/p.Groups*p.R*p.S)
			dy := randSlice(rng, p.N*p.K*p.OH*p.OW)
			runConv(t, p, x, w, dy, func(v []float64) []float64 { return append([]float64(nil), v...) }, 1e-12)
			runConv(t, p, x, w, dy, to32, 1e-5)
		})
	}
}

func TestConvRange(t *testing.T) {
	for off := -7; off <= 7; off++ {
		for stride := 1; stride <= 3; stride++ {
			for size := 0; size <= 5; size++ {
				for n := 0; n <= 6; n++ {
					lo, hi := convRange(off, stride, size, n)
					for o := range n {
						in := o*stride+off >= 0 && o*stride+off < size
						if in != (o >= lo && o < hi) {
							t.Fatalf("convRange(%d, %d, %d, %d) = [%d, %d), but output %d inside is %v", off, stride, size, n, lo, hi, o, in)
						}
					}
				}
			}
		}
	}
}

// convShape fills in OH and OW.
func convShape(p ConvArgs) ConvArgs {
	if p.DilH == 0 {
		p.DilH, p.DilW = 1, 1
	}
	if p.StrideH == 0 {
		p.StrideH, p.StrideW = 1, 1
	}
	if p.Groups == 0 {
		p.Groups = 1
	}
	p.OH = (p.H+2*p.PadH-p.DilH*(p.R-1)-1)/p.StrideH + 1
	p.OW = (p.W+2*p.PadW-p.DilW*(p.S-1)-1)/p.StrideW + 1
	return p
}

// convPathShapes exercise each path of conv_col.go and conv_job.go.
var convPathShapes = []ConvArgs{
	// Stride 1 with OW = W: the contiguous fast path.
	{N: 2, C: 3, H: 7, W: 9, K: 4, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 1, C: 2, H: 5, W: 6, K: 3, R: 5, S: 5, PadH: 2, PadW: 2},
	{N: 3, C: 4, H: 9, W: 8, K: 2, R: 3, S: 3, PadH: 2, PadW: 2, DilH: 2, DilW: 2},
	{N: 2, C: 2, H: 1, W: 1, K: 3, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 2, C: 3, H: 6, W: 5, K: 2, R: 3, S: 1, PadH: 1},
	{N: 2, C: 3, H: 4, W: 5, K: 2, R: 1, S: 3, PadW: 1},
	{N: 1, C: 2, H: 3, W: 2, K: 2, R: 3, S: 5, PadH: 1, PadW: 2}, // kernel wider than the image
	{N: 2, C: 2, H: 1, W: 1, K: 2, R: 5, S: 5, PadH: 2, PadW: 2}, // padding wider than the image
	{N: 1, C: 1, H: 2, W: 1, K: 1, R: 1, S: 7, PadW: 3},
	// Stride 2 (even and odd sizes), 1×1 stride 2, mixed strides.
	{N: 2, C: 3, H: 8, W: 8, K: 4, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
	{N: 2, C: 3, H: 7, W: 9, K: 4, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
	{N: 2, C: 4, H: 7, W: 6, K: 3, R: 1, S: 1, StrideH: 2, StrideW: 2},
	{N: 2, C: 2, H: 7, W: 10, K: 3, R: 3, S: 3, StrideH: 1, StrideW: 3, PadH: 1, PadW: 1},
	{N: 2, C: 2, H: 9, W: 6, K: 3, R: 3, S: 3, StrideH: 2, StrideW: 1, PadH: 1, PadW: 1},
	// Stride 2 over rows long enough for the unrolled gather, even and odd
	// widths.
	{N: 2, C: 3, H: 5, W: 37, K: 2, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
	{N: 2, C: 2, H: 4, W: 34, K: 3, R: 1, S: 1, StrideH: 2, StrideW: 2},
	{N: 1, C: 2, H: 3, W: 40, K: 2, R: 1, S: 5, StrideH: 1, StrideW: 2, PadW: 2},
	// Unpadded and dilated convolutions: per-row copies.
	{N: 2, C: 3, H: 6, W: 7, K: 2, R: 3, S: 3},
	{N: 2, C: 2, H: 8, W: 9, K: 3, R: 3, S: 3, PadH: 1, PadW: 1, DilH: 2, DilW: 2},
	{N: 1, C: 2, H: 9, W: 9, K: 2, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 2, PadW: 2, DilH: 2, DilW: 2},
	// Groups, depthwise.
	{N: 2, C: 4, H: 6, W: 6, K: 6, R: 3, S: 3, PadH: 1, PadW: 1, Groups: 2},
	{N: 2, C: 3, H: 7, W: 7, K: 3, R: 3, S: 3, PadH: 1, PadW: 1, Groups: 3},
	{N: 1, C: 4, H: 8, W: 7, K: 8, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, Groups: 4},
	// Pointwise, with few samples (bands and channel blocks).
	{N: 1, C: 5, H: 6, W: 7, K: 3, R: 1, S: 1},
	{N: 3, C: 6, H: 3, W: 5, K: 4, R: 1, S: 1, Groups: 2},
	// Enough rows (C·R·S ≥ 256) for several weight-gradient blocks, and
	// one sample for several input-gradient channel blocks.
	{N: 3, C: 32, H: 5, W: 6, K: 4, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 1, C: 17, H: 6, W: 5, K: 3, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
	{N: 2, C: 40, H: 3, W: 3, K: 5, R: 1, S: 1},
	// More filters than one mc block and more rows than one kc slice: the
	// packed filters' blocks past the first.
	{N: 1, C: 3, H: 7, W: 7, K: 300, R: 1, S: 1, StrideH: 2, StrideW: 2},
	{N: 2, C: 48, H: 4, W: 4, K: 20, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 8, C: 30, H: 3, W: 3, K: 3, R: 3, S: 3, PadH: 1, PadW: 1},
	// Batches of small planes: several samples per forward unit (the
	// last with fewer), with groups and stride 2.
	{N: 17, C: 3, H: 3, W: 3, K: 5, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 9, C: 4, H: 4, W: 3, K: 6, R: 3, S: 3, PadH: 1, PadW: 1, Groups: 2},
	{N: 40, C: 2, H: 5, W: 5, K: 3, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
	{N: 20, C: 4, H: 3, W: 4, K: 3, R: 3, S: 3, PadH: 1, PadW: 1},
	// Pointwise over batches of small planes: samples side by side, and
	// (with small tiles) several input-gradient channel blocks.
	{N: 20, C: 30, H: 3, W: 3, K: 5, R: 1, S: 1},
	{N: 9, C: 8, H: 2, W: 3, K: 6, R: 1, S: 1, Groups: 2},
	// Empty output in one direction.
	{N: 2, C: 2, H: 2, W: 6, K: 2, R: 3, S: 3, PadW: 1},
}

// TestConv2dPaths compares the kernels with the reference on
// convPathShapes and on random shapes, under the default tiling, with
// one output row per band, with every call
// split across the workers, and with the weight gradient split by blocks
// of dw's columns instead of chunks of samples.
func TestConv2dPaths(t *testing.T) {
	settings := []convSetting{
		{convTile, convPart, convDWSmall}, {1, convPart, convDWSmall}, {convTile, 1, convDWSmall},
		{1, 1, convDWSmall}, {100, 1, convDWSmall}, {convTile, 1, 0}, {100, 1, 0},
	}
	forConvShapes(t, rand.New(rand.NewPCG(3, 4)), settings, 40, func(t *testing.T, p ConvArgs, x, w, dy []float64) {
		runConv(t, p, x, w, dy, func(v []float64) []float64 { return append([]float64(nil), v...) }, 1e-12)
		runConv(t, p, x, w, dy, to32, 1e-5)
	})
}

// convSetting is one tiling of the convolution driver: convTile (and
// convMinCols at most that, convFilters at most 8× that), convPart and
// convDWSmall.
type convSetting struct{ tile, part, small int }

// forConvShapes runs f under each setting on every convPathShapes entry
// and on random shapes, with random x, w and dy, and restores the tiling.
func forConvShapes(t *testing.T, rng *rand.Rand, settings []convSetting, random int, f func(t *testing.T, p ConvArgs, x, w, dy []float64)) {
	defer func(tile, cols, part, small, filters, pack int) {
		convTile, convMinCols, convPart, convDWSmall, convFilters, packPart = tile, cols, part, small, filters, pack
	}(convTile, convMinCols, convPart, convDWSmall, convFilters, packPart)
	var shapes []ConvArgs
	for _, p := range convPathShapes {
		shapes = append(shapes, convShape(p))
	}
	for range random {
		shapes = append(shapes, randConv(rng))
	}
	cols, filters, pack := convMinCols, convFilters, packPart
	for _, s := range settings {
		convTile, convMinCols, convPart, convDWSmall = s.tile, min(s.tile, cols), s.part, s.small
		packPart = min(pack, s.part) // part 1: the filters packed by every worker too
		convFilters = min(filters, 8*s.tile)
		for i, p := range shapes {
			t.Run(fmt.Sprintf("tile%d_part%d_small%d/%d", s.tile, s.part, s.small, i), func(t *testing.T) {
				x := randSlice(rng, p.N*p.C*p.H*p.W)
				w := randSlice(rng, p.K*p.C/p.Groups*p.R*p.S)
				dy := randSlice(rng, p.N*p.K*p.OH*p.OW)
				f(t, p, x, w, dy)
			})
		}
	}
}

// TestConv2dNoAlloc checks that the kernels allocate nothing in steady
// state, split across the workers.
func TestConv2dNoAlloc(t *testing.T) {
	defer func(tile, cols, part, pack int) {
		convTile, convMinCols, convPart, packPart = tile, cols, part, pack
	}(convTile, convMinCols, convPart, packPart)
	convTile, convMinCols, convPart, packPart = 64, 1, 1, 1 // many bands and filter panels, split across the workers
	p := convShape(ConvArgs{N: 4, C: 8, H: 10, W: 10, K: 8, R: 3, S: 3, PadH: 1, PadW: 1})
	rng := rand.New(rand.NewPCG(5, 6))
	x, w := to32(randSlice(rng, p.N*p.C*p.H*p.W)), to32(randSlice(rng, p.K*p.C*9))
	y, dy := make([]float32, p.N*p.K*p.OH*p.OW), to32(randSlice(rng, p.N*p.K*p.OH*p.OW))
	dx, dw := make([]float32, len(x)), make([]float32, len(w))
	runs := 10
	wsF, wsI, wsW := convWS[float32](ConvForward, p), convWS[float32](ConvGradInput, p), convWS[float32](ConvGradWeight, p)
	for name, f := range map[string]func(){
		"Conv2d":           func() { Conv2d(p, y, x, w, wsF) },
		"Conv2dGradInput":  func() { Conv2dGradInput(p, dx, dy, w, wsI) },
		"Conv2dGradWeight": func() { Conv2dGradWeight(p, dw, dy, x, wsW) },
	} {
		f()
		if allocs := testing.AllocsPerRun(runs, f); allocs != 0 {
			t.Errorf("%s allocates %v times per call, want 0", name, allocs)
		}
	}
}

// TestConv2dSgemmKernels runs the float32 kernels over convPathShapes on
// every float32 GEMM kernel this CPU can run (the AVX2 6×16 one of Zen 3
// beside the AVX-512 12×32 one, and the Go kernels of both shapes): the
// packed filters and the samples side by side follow each kernel's mr and
// nr.
func TestConv2dSgemmKernels(t *testing.T) {
	kernels, _ := sgemmAsmKernels()
	kernels = append(kernels, sgemmGoKernel, go12x32)
	defer func(saved gemmKernel[float32]) { sgemm = saved }(sgemm)
	rng := rand.New(rand.NewPCG(9, 10))
	for _, kn := range kernels {
		sgemm = kn
		for i, p := range convPathShapes {
			p = convShape(p)
			t.Run(fmt.Sprintf("%s/%d", kn.name, i), func(t *testing.T) {
				x := randSlice(rng, p.N*p.C*p.H*p.W)
				w := randSlice(rng, p.K*p.C/p.Groups*p.R*p.S)
				dy := randSlice(rng, p.N*p.K*p.OH*p.OW)
				runConv(t, p, x, w, dy, to32, 1e-5)
			})
		}
	}
}

// TestConv2dDeterministic checks that the float32 kernels give the same
// bits on one worker as split across all of them (convPart 1), over
// convPathShapes: units, tiles and the order of partial sums depend on
// the convolution alone.
func TestConv2dDeterministic(t *testing.T) {
	defer func(part, pack int) { convPart, packPart = part, pack }(convPart, packPart)
	rng := rand.New(rand.NewPCG(11, 12))
	for i, p := range convPathShapes {
		p = convShape(p)
		x := to32(randSlice(rng, p.N*p.C*p.H*p.W))
		w := to32(randSlice(rng, p.K*p.C/p.Groups*p.R*p.S))
		dy := to32(randSlice(rng, p.N*p.K*p.OH*p.OW))
		var outs [2][3][]float32
		for k, part := range []int{1 << 40, 1} {
			convPart, packPart = part, part
			o := &outs[k]
			o[0], o[1], o[2] = make([]float32, len(dy)), make([]float32, len(x)), make([]float32, len(w))
			Conv2d(p, o[0], x, w, convWS[float32](ConvForward, p))
			Conv2dGradInput(p, o[1], dy, w, convWS[float32](ConvGradInput, p))
			Conv2dGradWeight(p, o[2], dy, x, convWS[float32](ConvGradWeight, p))
		}
		for pass := range 3 {
			for e, v := range outs[0][pass] {
				if math.Float32bits(v) != math.Float32bits(outs[1][pass][e]) {
					t.Fatalf("shape %d %+v pass %d: [%d] = %v on one worker, %v on all", i, p, pass, e, v, outs[1][pass][e])
				}
			}
		}
	}
}

// TestConv2dPointwiseGather checks that a pointwise convolution over
// small planes gives the same bits whether its units gather several
// samples side by side or multiply x and dy in place, one sample per GEMM
// (convDirectCols 1): every output is the same dot product in the same
// order either way.
func TestConv2dPointwiseGather(t *testing.T) {
	defer func(cols int) { convDirectCols = cols }(convDirectCols)
	rng := rand.New(rand.NewPCG(13, 14))
	for _, p := range []ConvArgs{
		{N: 32, C: 64, H: 4, W: 4, K: 40, R: 1, S: 1},
		{N: 20, C: 30, H: 3, W: 3, K: 5, R: 1, S: 1},
		{N: 9, C: 8, H: 2, W: 3, K: 6, R: 1, S: 1, Groups: 2},
	} {
		p = convShape(p)
		x := to32(randSlice(rng, p.N*p.C*p.H*p.W))
		w := to32(randSlice(rng, p.K*p.C/p.Groups))
		dy := to32(randSlice(rng, p.N*p.K*p.OH*p.OW))
		var outs [2][2][]float32
		for k, cols := range []int{64, 1} {
			convDirectCols = cols
			o := &outs[k]
			o[0], o[1] = make([]float32, len(dy)), make([]float32, len(x))
			Conv2d(p, o[0], x, w, nil)
			Conv2dGradInput(p, o[1], dy, w, nil)
		}
		for pass := range 2 {
			for e, v := range outs[0][pass] {
				if math.Float32bits(v) != math.Float32bits(outs[1][pass][e]) {
					t.Fatalf("%+v pass %d: [%d] = %v gathered, %v in place", p, pass, e, v, outs[1][pass][e])
				}
			}
		}
	}
}

// TestGatherRows2 compares gatherRows2 (the assembly where the CPU has
// AVX2) with the plain loop, on float32 and 16-bit rows of every length
// up to past two blocks, with the source rows just long enough (avail =
// 2n−1) and with room for whole blocks.
func TestGatherRows2(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for n := 1; n <= 70; n++ {
		for _, extra := range []int{0, 33} {
			rows, avail := 3, 2*n-1+extra
			srcStep, dstStep := avail+5, n+3
			src := make([]uint16, (rows-1)*srcStep+avail)
			for i := range src {
				src[i] = uint16(rng.Uint32())
			}
			src32 := make([]float32, len(src))
			for i, v := range src {
				src32[i] = float32(v)
			}
			got := make([]uint16, (rows-1)*dstStep+n)
			got32 := make([]float32, len(got))
			gatherRows2(got, src, rows, n, dstStep, srcStep, avail)
			gatherRows2(got32, src32, rows, n, dstStep, srcStep, avail)
			for r := range rows {
				for i := range n {
					want := src[r*srcStep+2*i]
					if g, g32 := got[r*dstStep+i], got32[r*dstStep+i]; g != want || g32 != float32(want) {
						t.Fatalf("n=%d avail=%d row %d [%d]: got %d (16-bit), %v (float32), want %d", n, avail, r, i, g, g32, want)
					}
				}
			}
		}
	}
}

// TestConv2dGradWeightBlocks checks that the weight gradient gives the
// same bits, float32 and bfloat16, whatever the blocks of dw's columns
// its units take (convWGradBlocks 2, 4 and 16 against the default): each
// block's columns are the same dot products over the samples in the same
// order, so the plan may choose the blocks by speed alone.
func TestConv2dGradWeightBlocks(t *testing.T) {
	defer func(b int) { convWGradBlocks = b }(convWGradBlocks)
	rng := rand.New(rand.NewPCG(15, 16))
	for _, p := range []ConvArgs{conv3x3(8, 16, 128, 256, 2), conv3x3(6, 8, 64, 128, 1), conv3x3(4, 12, 48, 160, 2)} {
		x, dy := to32(randSlice(rng, p.N*p.C*p.H*p.W)), to32(randSlice(rng, p.N*p.K*p.OH*p.OW))
		hx, hdy := Half16{Bits: make([]uint16, len(x)), BF16: true}, Half16{Bits: make([]uint16, len(dy)), BF16: true}
		F32ToBF16(hx.Bits, x)
		F32ToBF16(hdy.Bits, dy)
		var want []float32
		var hwant []uint16
		for _, blocks := range []int{convUnits, 2, 4, 16} {
			convWGradBlocks = blocks
			dw, hdw := make([]float32, p.K*p.C*9), make([]uint16, p.K*p.C*9)
			Conv2dGradWeight(p, dw, dy, x, convWS[float32](ConvGradWeight, p))
			Conv2dGradWeightHalf(p, ConvOut{H: Half16{Bits: hdw, BF16: true}}, hdy, hx, nil)
			if want == nil {
				want, hwant = dw, hdw
				continue
			}
			for e := range dw {
				if math.Float32bits(dw[e]) != math.Float32bits(want[e]) || hdw[e] != hwant[e] {
					t.Fatalf("%+v, %d blocks: dw[%d] = %v (bf16 %#04x), want %v (%#04x) as with %d",
						p, blocks, e, dw[e], hdw[e], want[e], hwant[e], convUnits)
				}
			}
		}
	}
}
