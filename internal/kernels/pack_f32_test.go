package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPackLayouts checks each kernel's packing (its assembly packers where
// this CPU runs them, on both the AVX-512 and the AVX2 shapes; else its Go
// packers) against the layout gemm_pack.go documents, computed here value
// by value, bit for bit: row and column counts around the tile, odd and
// 8-multiple depths, offsets, leading dimensions wider than the matrix,
// both orientations, alpha 1 and not.
func TestPackLayouts(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	asm, _ := sgemmAsmKernels()
	for _, kn := range append(asm, sgemmGoKernel, go12x32) {
		testPackLayout(t, r, kn)
	}
	testPackLayout(t, r, dgemmKernel)
}

func testPackLayout[T Float](t *testing.T, r *rand.Rand, kn gemmKernel[T]) {
	t.Helper()
	for _, trans := range []bool{false, true} {
		for _, width := range []int{1, kn.mr - 1, kn.mr, kn.mr + 1, 2*kn.mr + 5, kn.nr - 1, kn.nr, 3*kn.nr + 7} {
			for _, kc := range []int{1, 7, 8, 9, 16, 23, 33, 64} {
				for i, pad := range []int{0, 5} {
					alpha := T([]float64{1, -1.5}[(width+kc+i)%2])
					testPack(t, r, &kn, false, trans, width, kc, pad, alpha)
					testPack(t, r, &kn, true, trans, width, kc, pad, alpha)
				}
			}
		}
	}
}

// packSource returns a random rows×cols matrix at offset off with row
// stride cols+pad, the slice ending right after its last element.
func packSource[T Float](r *rand.Rand, rows, cols, pad, off int) (src []T, ld int) {
	ld = cols + pad
	return gemmToT[T](gemmRand(r, off+(rows-1)*ld+cols)), ld
}

// packGuard is the number of values past a packed block that must stay
// untouched; packDst fills a block of n values and the guard with NaN.
const packGuard = 7

func packDst[T Float](n int) []T {
	d := make([]T, n+packGuard)
	for i := range d {
		d[i] = T(math.NaN())
	}
	return d
}

// testPack packs a width×kc block of op(A) at (2, 1) (sideB false) or a
// kc×width block of op(B) at (1, 2) and compares it with the layout: with
// w the panel width (mr or nr) and x(i, p) row i of op(A) or column i of
// op(B) at depth p, dst[q·w·kc + p·w + r] = alpha·x(2+q·w+r, 1+p), 0 past
// the block (alpha 1 for op(B)).
func testPack[T Float](t *testing.T, r *rand.Rand, kn *gemmKernel[T], sideB, trans bool, width, kc, pad int, alpha T) {
	t.Helper()
	const i0, p0, off = 2, 1, 3
	// Rows of A and columns of B are contiguous runs of depths in op(A) =
	// A and op(B) = Bᵀ.
	runs := trans == sideB
	rows, cols := i0+width, p0+kc
	if !runs {
		rows, cols = cols, rows
	}
	src, ld := packSource[T](r, rows, cols, pad, off)
	x := func(i, p int) T {
		if runs {
			return src[off+i*ld+p]
		}
		return src[off+p*ld+i]
	}
	w, name := kn.mr, kn.name+" packA"
	if sideB {
		w, name, alpha = kn.nr, kn.name+" packB", 1
	}
	padded := roundUp(width, w)
	got := packDst[T](padded * kc)
	if sideB {
		packB(kn, got, operand[T]{f: src}, off, ld, trans, p0, kc, i0, width, nil)
	} else {
		packA(kn, got, operand[T]{f: src}, off, ld, trans, i0, width, p0, kc, alpha, nil)
	}
	for i := range padded {
		for p := range kc {
			var want T
			if i < width {
				want = alpha * x(i0+i, p0+p)
			}
			at := i/w*w*kc + p*w + i%w
			if got[at] != want {
				t.Fatalf("%s trans=%v width=%d kc=%d ld=%d alpha=%g: row/column %d depth %d at [%d] = %g, want %g",
					name, trans, width, kc, ld, alpha, i, p, at, got[at], want)
			}
		}
	}
	checkGuard(t, name, got[padded*kc:])
}

// checkGuard fails unless every value of guard is still packDst's NaN.
func checkGuard[T Float](t *testing.T, name string, guard []T) {
	t.Helper()
	for i, v := range guard {
		if v == v {
			t.Fatalf("%s wrote %g at %d past the packed block", name, v, i)
		}
	}
}

// TestGemmEveryKernel runs the shared case table through the driver on
// every float32 kernel of this build with its real block sizes, the AVX2
// one included where AVX-512 would be chosen, so that each kernel's
// packers meet edge panels, depth tails and kc slices in place.
func TestGemmEveryKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	asm, _ := sgemmAsmKernels()
	for _, kn := range append(asm, sgemmGoKernel, go12x32) {
		for _, tc := range gemmCases(0) {
			if tc.m > 0 && tc.n > 0 && tc.k > 0 && tc.alpha != 0 { // gemmBlocked's domain
				gemmRunCase(t, r, tc, &kn)
			}
		}
		// Depths across kc slices with a tail of 8, and a panel edge.
		gemmRunCase(t, r, gemmCase{m: 2*kn.mr + 1, n: 3*kn.nr - 1, k: kn.kc + 13, alpha: -0.5, beta: 0.5,
			batch: 1, pad: [3]int{3, 2, 1}, off: [3]int{1, 2, 3}}, &kn)
		gemmRunCase(t, r, gemmCase{ta: true, tb: true, m: 2*kn.mr + 1, n: 3*kn.nr - 1, k: kn.kc + 13, alpha: 2,
			beta: 0, batch: 1, pad: [3]int{1, 4, 0}, off: [3]int{2, 0, 1}, nanC: true}, &kn)
	}
}
