package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// bf16Edges are bfloat16 bit patterns at the edges of the format: signed
// zeros, denormals (read as zero), the smallest normals, values whose
// products fall below the normal range or round, the largest finite value,
// infinities and NaNs (quiet and signalling).
var bf16Edges = []uint16{
	0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x8080, 0x00FF,
	0x1F80, 0x9FC0, 0x2000, 0x2001, // near 2^-64 and 2^-63: products near 2^-127
	0x3F80, 0xBF80, 0x3F81, 0x3FFF, 0x4040, 0xC0A1, 0x4B80, 0xCB81, // 1, 1+2^-7, 3, 2^24 …
	0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC1, 0xFF81,
}

// pairKernelOrSkip returns the assembly pair kernel, or skips.
func pairKernelOrSkip(t *testing.T) *gemmKernel[float32] {
	t.Helper()
	if sbgemm == nil {
		t.Skip("no bfloat16 pair kernel: this CPU lacks AVX512_BF16 (or the build is noasm)")
	}
	return sbgemm
}

// goPairKernel is the assembly pair kernel's blocking with its Go twin.
func goPairKernel(kn *gemmKernel[float32]) *gemmKernel[float32] {
	g := *kn
	g.name, g.full = "go-pairs-12x32", sbgemmGo
	if g.half != nil {
		g.half = sbgemmGoHalf
	}
	if g.narrow != nil {
		g.narrow = sbgemmGoNarrow
	}
	return &g
}

// TestPairKernelEdgesExhaustive runs VDPBF16PS through the micro-kernel on
// every pair of every edge value (a pair of A against a pair of B: 25⁴
// lanes, one pair step each), then on two pair steps that chain through
// the accumulator, and compares each float32 result, bit for bit, with
// the Go twin.
func TestPairKernelEdgesExhaustive(t *testing.T) {
	kn := pairKernelOrSkip(t)
	var pairs []uint32
	for _, hi := range bf16Edges {
		for _, lo := range bf16Edges {
			pairs = append(pairs, uint32(lo)|uint32(hi)<<16)
		}
	}
	a, b := make([]float32, 12*2), make([]float32, 32*2)
	got, want := make([]float32, 12*32), make([]float32, 12*32)
	check := func(k int) {
		kn.full(k, a, b, got, 32, 0, 0)
		sbgemmGo(k, a, b, want, 32, 0, 0)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				r, c := i/32, i%32
				t.Fatalf("k=%d row %d col %d: A pairs %#08x %#08x, B pairs %#08x %#08x: VDPBF16PS %#08x (%g), Go twin %#08x (%g)",
					k, r, c, words(a)[r], words(a)[12+r], words(b)[c], words(b)[32+c],
					math.Float32bits(got[i]), got[i], math.Float32bits(want[i]), want[i])
			}
		}
	}
	for i0 := 0; i0 < len(pairs); i0 += 12 {
		for r := range 12 {
			words(a)[r] = pairs[(i0+r)%len(pairs)]
		}
		for j0 := 0; j0 < len(pairs); j0 += 32 {
			for c := range 32 {
				words(b)[c] = pairs[(j0+c)%len(pairs)]
			}
			check(1) // odd k: the pair's high half must be zero
			check(2)
		}
	}
	// Two pair steps: the second meets an accumulator the first made
	// (large, tiny, infinite, NaN).
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		for i := range words(a) {
			words(a)[i] = pairs[r.IntN(len(pairs))]
		}
		for i := range words(b) {
			words(b)[i] = pairs[r.IntN(len(pairs))]
		}
		check(4)
	}
}

// TestPairKernelModes compares the micro-kernel and its six-row and
// 16-column variants with their twins on random bfloat16 panels for every mode and k up to a
// few hundred, bit for bit.
func TestPairKernelModes(t *testing.T) {
	kn := pairKernelOrSkip(t)
	r := rand.New(rand.NewPCG(5, 6))
	ldc := 37
	for _, k := range []int{0, 1, 2, 3, 5, 64, 383, 384} {
		kp := (k + 1) / 2
		a, b := bf16Panel(r, 12*kp, k), bf16Panel(r, 32*kp, k)
		c0 := gemmToT[float32](gemmRand(r, 11*ldc+32))
		for mode, beta := range []float32{0, 1, -0.625} {
			for _, f := range []struct {
				name      string
				asm, twin func(int, []float32, []float32, []float32, int, float32, int)
			}{{"full", kn.full, sbgemmGo}, {"half", kn.half, sbgemmGoHalf}, {"narrow", kn.narrow, sbgemmGoNarrow}} {
				// The whole buffer is compared: the half kernel must
				// leave rows 6..11 as they were, the narrow one columns
				// 16..31.
				got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
				f.asm(k, a, b, got, ldc, beta, mode)
				f.twin(k, a, b, want, ldc, beta, mode)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s k=%d mode=%d: c[%d] = %g, Go twin %g", f.name, k, mode, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// bf16Panel returns n pair words of random bfloat16 values in [-1, 1],
// the high halves zero when k is odd in the last group, as the packers
// leave them.
func bf16Panel(r *rand.Rand, n, k int) []float32 {
	p := make([]float32, n)
	w := words(p)
	for i := range w {
		w[i] = uint32(dtype.BF16FromF32(float32(2*r.Float64()-1))) |
			uint32(dtype.BF16FromF32(float32(2*r.Float64()-1)))<<16
	}
	if k%2 == 1 {
		per := n / ((k + 1) / 2)
		for i := n - per; i < n; i++ {
			w[i] &= 0xFFFF
		}
	}
	return p
}

// TestGemmBF16Pairs runs whole bfloat16 GEMMs (transposes, odd and long K,
// edge tiles, batches, offsets, every beta) through the blocked driver on
// the pair kernel's Go twin, against the float64 product of the bfloat16
// inputs to float32 rounding of a K-long sum (the packers and the twin run
// on every machine), and, where the CPU has AVX512_BF16, through GemmHalf
// on the assembly kernel and packers, which must agree bit for bit with
// the twin kernel on the Go packers.
func TestGemmBF16Pairs(t *testing.T) {
	twin := goPairKernel(&gemmKernel[float32]{mr: 12, nr: 32, mc: 240, kc: 384, nc: 2048, pairs: true})
	if sbgemm != nil {
		twin = goPairKernel(sbgemm)
	}
	r := rand.New(rand.NewPCG(11, 12))
	var cases []gemmCase
	i := 0
	for _, k := range []int{1, 2, 3, 7} {
		for _, m := range []int{1, 5, 12, 13} {
			for _, n := range []int{1, 31, 33} {
				cases = append(cases, gemmCase{ta: i%2 == 1, tb: i%3 == 1, m: m, n: n, k: k, alpha: 1,
					beta: []float64{0, 1, 0.5}[i%3], batch: 1 + i%2, pad: [3]int{i % 3, 1, 2}, off: [3]int{1, 2, 3}})
				i++
			}
		}
	}
	cases = append(cases,
		gemmCase{m: 30, n: 70, k: 801, alpha: 1, beta: 0.25, batch: 1, pad: [3]int{3, 1, 0}},
		gemmCase{ta: true, tb: true, m: 250, n: 33, k: 390, alpha: 1, beta: 0, batch: 2, nanC: true})
	for _, tc := range cases {
		checkPairsCase(t, r, twin, tc)
	}
}

// checkPairsCase runs tc on random bfloat16 operands through the blocked
// driver on twin (the pair kernel's Go twins) and the Go packers, checks
// it against the float64 product of the bfloat16 inputs to float32
// rounding of a K-long sum, and, where the CPU has AVX512_BF16, runs it
// through GemmHalf (assembly kernels and packers), which must agree bit
// for bit with the twins and with the 12×32 kernel alone (no edge-tile
// kernels).
func checkPairsCase(t *testing.T, r *rand.Rand, twin *gemmKernel[float32], tc gemmCase) {
	t.Helper()
	g, ah, bh, c := bf16CaseInputs(r, tc)
	got := append([]float32(nil), c...)
	var jobs freeList[gemmJob[float32]]
	withGoPacking(func() {
		gemmBlocked(twin, &jobs, g, operand[float32]{h: ah, bf16: true}, operand[float32]{h: bh, bf16: true}, got)
	})
	if sbgemm != nil {
		asm := append([]float32(nil), c...)
		// The pair kernel itself, as GemmHalf runs it where there is no
		// AMX (with AMX, depths of 32 and more take the AMX kernel:
		// gemm_amx_test.go checks that dispatch).
		gemmBias(sbgemm, &jobs, g, operand[float32]{h: ah, bf16: true}, operand[float32]{h: bh, bf16: true}, nil, asm)
		// The edge-tile kernels must not change a bit: the 12×32
		// kernel alone on every tile, edge tiles merged from a whole
		// tile, is the reference.
		whole := *sbgemm
		whole.half, whole.narrow = nil, nil
		full := append([]float32(nil), c...)
		gemmBlocked(&whole, &jobs, g, operand[float32]{h: ah, bf16: true}, operand[float32]{h: bh, bf16: true}, full)
		for j := range got {
			if math.Float32bits(asm[j]) != math.Float32bits(got[j]) {
				t.Fatalf("%v: c[%d] = %g, driver on the Go twins %g", tc, j, asm[j], got[j])
			}
			if math.Float32bits(asm[j]) != math.Float32bits(full[j]) {
				t.Fatalf("%v: c[%d] = %g, the 12×32 kernel alone %g", tc, j, asm[j], full[j])
			}
		}
	}
	checkBF16Ref(t, tc, g, ah, bh, c, got)
}

// bf16CaseInputs returns tc's arguments, random bfloat16 A and B and a
// random C (all NaN for nanC).
func bf16CaseInputs(r *rand.Rand, tc gemmCase) (g GemmArgs, ah, bh []uint16, c []float32) {
	g, la, lb, lc := tc.args()
	ah, bh = gemmHalfBits(r, la, true), gemmHalfBits(r, lb, true)
	c = gemmToT[float32](gemmRand(r, lc))
	if tc.nanC {
		for j := range c {
			c[j] = float32(math.NaN())
		}
	}
	return g, ah, bh, c
}

// checkBF16Ref checks got, the product of case tc (g) on bfloat16 A and B
// bits over C c, against the float64 product of the bfloat16 inputs to
// float32 rounding of a K-long sum.
func checkBF16Ref(t *testing.T, tc gemmCase, g GemmArgs, ah, bh []uint16, c, got []float32) {
	t.Helper()
	af, bf := make([]float32, len(ah)), make([]float32, len(bh))
	halfToF32(af, ah, true)
	halfToF32(bf, bh, true)
	ref, mag := gemmRef(g, gemmToF64(af), gemmToF64(bf), gemmToF64(c))
	gemmCheck(t, tc.String(), g, got, gemmToF64(c), ref, mag, gemmEps32)
}

// TestGemmHalfPairsSmallShapes runs every small shape (M up to 13 and 25,
// N across one and two 32-column panels, K odd and even up to 33, all
// four transposes, odd offsets and padded leading dimensions) through
// GemmHalf on the assembly kernel and packers, and compares it bit for
// bit with the blocked driver on the Go twins of both, and to float32
// rounding with the float64 product of the bfloat16 inputs.
func TestGemmHalfPairsSmallShapes(t *testing.T) {
	kn := pairKernelOrSkip(t)
	twin := goPairKernel(kn)
	r := rand.New(rand.NewPCG(13, 14))
	ms := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 25}
	ns := []int{1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 65}
	ks := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 33}
	i := 0
	for _, m := range ms {
		for _, n := range ns {
			for _, k := range ks {
				i++
				// beta 0.3: beta·C is inexact, so a fused and an
				// unfused acc + beta·C differ.
				tc := gemmCase{ta: i%2 == 1, tb: i/2%2 == 1, m: m, n: n, k: k, alpha: 1,
					beta: []float64{0, 1, 0.3}[i%3], pad: [3]int{i % 3, i % 5, 1}, off: [3]int{i % 4, i % 3, 1}}
				checkPairsCase(t, r, twin, tc)
			}
		}
	}
}
