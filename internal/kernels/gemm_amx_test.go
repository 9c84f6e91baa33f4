package kernels

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// amxOrSkip returns the AMX kernel, or skips.
func amxOrSkip(t *testing.T) *gemmKernel[float32] {
	t.Helper()
	if amxgemm == nil {
		t.Skip("no AMX kernel: this CPU lacks AMX-BF16, the OS refused the tile state, HEADROOM_NO_AMX=1, or the build is noasm")
	}
	return amxgemm
}

// goAMXKernel is the AMX kernel's blocking with its Go twin.
func goAMXKernel() *gemmKernel[float32] {
	return &gemmKernel[float32]{name: "go-amx-32x32", mr: 32, nr: 32, mc: 256, kc: 512, nc: 2048,
		full: amxGo, pairs: true, amx: true}
}

// amxCompare runs the kernel and its twin on panels a, b of depth k over
// copies of c0 (row stride ldc) and fails at the first bit that differs.
func amxCompare(t *testing.T, kn *gemmKernel[float32], what string, k int, a, b, c0 []float32, ldc int, beta float32, mode int) {
	t.Helper()
	got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
	kn.full(k, a, b, got, ldc, beta, mode)
	amxGo(k, a, b, want, ldc, beta, mode)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			r, j := i/ldc, i%ldc
			t.Fatalf("%s k=%d mode=%d: c[%d][%d] = %#08x (%g), Go twin %#08x (%g); C was %#08x; A row %x; B column %x",
				what, k, mode, r, j, math.Float32bits(got[i]), got[i], math.Float32bits(want[i]), want[i],
				math.Float32bits(c0[i]), amxARow(a, r, k), amxBCol(b, j, k))
		}
	}
}

// amxARow and amxBCol are row r of an A panel and column j of a B panel
// of depth k, as pair words, for failure messages.
func amxARow(a []float32, r, k int) []uint32 {
	var row []uint32
	for s := range amxSteps(k) {
		row = append(row, words(a)[s*512+r*16:s*512+r*16+16]...)
	}
	return row
}

func amxBCol(b []float32, j, k int) []uint32 {
	var col []uint32
	for p := range 16 * amxSteps(k) {
		col = append(col, words(b)[p*32+j])
	}
	return col
}

// TestAMXKernelEdgesExhaustive runs TDPBF16PS on every pair of every
// bfloat16 edge value (bf16Edges: a pair of A against a pair of B, 25⁴
// combinations, one to a C element, the other 15 pairs zero), then on
// whole steps of random edge pairs chained through an accumulator loaded
// from edge float32 values (mode 1), and compares each result bit for
// bit with the Go twin.
func TestAMXKernelEdgesExhaustive(t *testing.T) {
	kn := amxOrSkip(t)
	var pairs []uint32
	for _, hi := range bf16Edges {
		for _, lo := range bf16Edges {
			pairs = append(pairs, uint32(lo)|uint32(hi)<<16)
		}
	}
	a, b := make([]float32, 512), make([]float32, 512)
	c := make([]float32, 32*32)
	for i0 := 0; i0 < len(pairs); i0 += 32 {
		for r := range 32 {
			words(a)[r*16] = pairs[(i0+r)%len(pairs)]
		}
		for j0 := 0; j0 < len(pairs); j0 += 32 {
			for j := range 32 {
				words(b)[j] = pairs[(j0+j)%len(pairs)]
			}
			amxCompare(t, kn, "edges", 32, a, b, c, 32, 0, 0)
		}
	}
	// Whole steps: two lanes of 16 products each, then the accumulator.
	accs := []uint32{0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x3F800000, 0xBF800001,
		0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00001, 0xFF800001, 0x4B800000}
	r := rand.New(rand.NewPCG(21, 22))
	a, b = make([]float32, 1024), make([]float32, 1024)
	for range 100 {
		for i := range words(a) {
			words(a)[i] = pairs[r.IntN(len(pairs))]
			words(b)[i] = pairs[r.IntN(len(pairs))]
		}
		for i := range c {
			c[i] = math.Float32frombits(accs[r.IntN(len(accs))])
		}
		amxCompare(t, kn, "edge steps", 64, a, b, c, 32, 0, 1)
	}
}

// amxWide returns n pair words of bfloat16 values across 2^-12 … 2^12,
// both signs, so that the lanes' sums round often; zero from depth k on
// (the packers' padding) for a B panel (cols 32) or an A panel (rows 32).
func amxWide(r *rand.Rand, n int) []float32 {
	p := make([]float32, n)
	for i := range words(p) {
		v := func() uint32 {
			f := float32((2*r.Float64() - 1) * math.Exp2(float64(r.IntN(25)-12)))
			return math.Float32bits(f) >> 16
		}
		words(p)[i] = v() | v()<<16
	}
	return p
}

// TestAMXKernelModes compares the kernel with its twin on random panels
// of values spread over 24 binades (every lane sum rounds), for one to
// five 16-pair steps and every mode, bit for bit over the whole C buffer
// (the kernel must not touch C past its 32×32 tile).
func TestAMXKernelModes(t *testing.T) {
	kn := amxOrSkip(t)
	r := rand.New(rand.NewPCG(23, 24))
	ldc := 37
	for _, k := range []int{1, 31, 32, 33, 64, 100, 160} {
		kb := amxSteps(k)
		a, b := amxWide(r, 512*kb), amxWide(r, 512*kb)
		c0 := gemmToT[float32](gemmRand(r, 32*ldc))
		for mode, beta := range []float32{0, 1, -0.3} {
			amxCompare(t, kn, "wide", k, a, b, c0, ldc, beta, mode)
		}
	}
}

// TestGemmHalfAMXSmallShapes runs small shapes (M and N across one, two
// and three 32-wide panels and their edges, K from 31 to 100 and across
// kc slices, all four transposes, offsets, padded leading dimensions,
// every beta, batches) through the blocked driver on the Go twin and the
// Go packers — the AMX kernel's twin from K = 32 on, the pair kernel's
// below — and checks it to float32 rounding of a K-long sum against the
// float64 product of the bfloat16 inputs (on every machine); where the
// CPU has AMX, GemmHalf must agree with it bit for bit.
func TestGemmHalfAMXSmallShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	i := 0
	var cases []gemmCase
	for _, m := range []int{1, 5, 16, 31, 32, 33, 65} {
		for _, n := range []int{1, 15, 16, 17, 32, 33, 65} {
			for _, k := range []int{31, 32, 33, 47, 64, 100} {
				i++
				if raceEnabled && i%5 != 0 {
					continue // under the race detector a fifth of the sweep (the plain run takes it all)
				}
				cases = append(cases, gemmCase{ta: i%2 == 1, tb: i/2%2 == 1, m: m, n: n, k: k, alpha: 1,
					beta: []float64{0, 1, 0.3}[i%3], batch: 1 + i%5/4, pad: [3]int{i % 3, i % 5, 1}, off: [3]int{i % 4, i % 3, 1}})
			}
		}
	}
	cases = append(cases,
		gemmCase{m: 70, n: 70, k: 801, alpha: 1, beta: 0.25, batch: 1, pad: [3]int{3, 1, 0}},
		gemmCase{ta: true, tb: true, m: 250, n: 33, k: 390, alpha: 1, beta: 0, batch: 2, nanC: true})
	for _, tc := range cases {
		checkAMXCase(t, r, tc)
	}
}

// checkAMXCase is one case of TestGemmHalfAMXSmallShapes.
func checkAMXCase(t *testing.T, r *rand.Rand, tc gemmCase) {
	t.Helper()
	g, ah, bh, c := bf16CaseInputs(r, tc)
	twin := goAMXKernel()
	if tc.k < amxMinK {
		twin = goPairKernel(&gemmKernel[float32]{mr: 12, nr: 32, mc: 240, kc: 384, nc: 2048, pairs: true})
		if sbgemm != nil {
			twin = goPairKernel(sbgemm)
		}
	}
	want := append([]float32(nil), c...)
	var jobs freeList[gemmJob[float32]]
	withGoPacking(func() {
		gemmBlocked(twin, &jobs, g, operand[float32]{h: ah, bf16: true}, operand[float32]{h: bh, bf16: true}, want)
	})
	if amxgemm != nil {
		got := append([]float32(nil), c...)
		GemmHalf(g, ah, bh, true, true, got)
		for j := range got {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("%v: c[%d] = %g, driver on the Go twin %s %g", tc, j, got[j], twin.name, want[j])
			}
		}
	}
	checkBF16Ref(t, tc, g, ah, bh, c, want)
}

// TestPackAAMX checks the AMX A packer against its definition: pair
// 16s+t of row r of panel q at word q·32·kc + s·512 + r·16 + t, the
// low half depth 2(16s+t), zero past the block's rows and depth, for
// both layouts of op(A).
func TestPackAAMX(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	for _, c := range []struct {
		trans      bool
		mc, kc, ld int
	}{{false, 32, 32, 40}, {false, 33, 63, 70}, {true, 70, 45, 71}, {true, 5, 100, 9}, {false, 64, 384, 384}} {
		rows, cols := c.mc+3, c.ld
		if c.trans {
			rows, cols = c.kc+2, c.ld
		}
		h := gemmHalfBits(r, rows*cols, true)
		panels := ceilDiv(c.mc-1, 32) // the block has mc−i0 rows
		dst := make([]float32, panels*32*c.kc)
		for i := range dst {
			dst[i] = float32(math.NaN()) // every word must be written
		}
		const i0, p0, off = 1, 2, 3
		kc := c.kc - p0 // the block's depth
		packAAMX(dst, h, off, c.ld, c.trans, i0, c.mc-i0, p0, kc)
		at := func(i, p int) uint32 {
			if i >= c.mc-i0 || p >= kc {
				return 0
			}
			if c.trans {
				return uint32(h[off+(p0+p)*c.ld+i0+i])
			}
			return uint32(h[off+(i0+i)*c.ld+p0+p])
		}
		d := words(dst)
		for q := range panels {
			for s := range amxSteps(kc) {
				for row := range 32 {
					for u := range 16 {
						i, p := q*32+row, 2*(16*s+u)
						want := at(i, p) | at(i, p+1)<<16
						if got := d[q*32*kc+s*512+row*16+u]; got != want {
							t.Fatalf("%+v: panel %d step %d row %d pair %d = %#08x, want %#08x", c, q, s, row, u, got, want)
						}
					}
				}
			}
		}
	}
}

// TestGemmHalfAMXPadding runs a product whose B is all NaN and then, on
// the same reused scratch, a shallower one (K = 40: 20 pairs, padded to
// 32): the padding rows of B must be zeroed by the packer, not left from
// the last call, or the zero padding of A meets NaN and every result is
// NaN.
func TestGemmHalfAMXPadding(t *testing.T) {
	amxOrSkip(t)
	r := rand.New(rand.NewPCG(29, 30))
	for _, tb := range []bool{false, true} {
		nan := gemmCase{tb: tb, m: 64, n: 64, k: 64, alpha: 1, batch: 1}
		g, la, lb, lc := nan.args()
		bh := make([]uint16, lb)
		for i := range bh {
			bh[i] = 0x7FC0
		}
		GemmHalf(g, gemmHalfBits(r, la, true), bh, true, true, make([]float32, lc))
		checkAMXCase(t, r, gemmCase{tb: tb, m: 64, n: 64, k: 40, alpha: 1, batch: 1})
	}
}

// TestGemmHalfAMXConcurrent runs the same AMX product on eight goroutines
// at once, 200 times each, with garbage-collector pressure (its
// stop-the-world signals land while tiles are in use), and checks every
// result bit for bit against one run alone: tile state must not leak
// between calls, threads or signal handlers.
func TestGemmHalfAMXConcurrent(t *testing.T) {
	amxOrSkip(t)
	r := rand.New(rand.NewPCG(31, 32))
	g, ah, bh, c := bf16CaseInputs(r, gemmCase{m: 96, n: 96, k: 200, alpha: 1, batch: 1})
	want := append([]float32(nil), c...)
	GemmHalf(g, ah, bh, true, true, want)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			got := make([]float32, len(c))
			for i := range 200 {
				copy(got, c)
				GemmHalf(g, ah, bh, true, true, got)
				for j := range got {
					if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
						t.Errorf("goroutine %d call %d: c[%d] = %g, alone %g", w, i, j, got[j], want[j])
						return
					}
				}
				if i%20 == 0 {
					_ = make([]byte, 1<<20)
				}
			}
		})
	}
	wg.Wait()
}
