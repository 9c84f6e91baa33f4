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
					testPackA(t, r, &kn, trans, width, kc, pad, alpha)
					testPackB(t, r, &kn, trans, width, kc, pad)
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

// testPackA packs a width×kc block of op(A) at (2, 1) and compares it with
// dst[q·mr·kc + p·mr + r] = alpha·op(A)[2+q·mr+r][1+p], 0 past the block.
func testPackA[T Float](t *testing.T, r *rand.Rand, kn *gemmKernel[T], trans bool, mc, kc, pad int, alpha T) {
	t.Helper()
	const i0, p0, off = 2, 1, 3
	rows, cols := i0+mc, p0+kc
	if trans {
		rows, cols = cols, rows
	}
	src, ld := packSource[T](r, rows, cols, pad, off)
	at := func(i, p int) T {
		if trans {
			return src[off+p*ld+i]
		}
		return src[off+i*ld+p]
	}
	mp := roundUp(mc, kn.mr)
	got := packDst[T](mp * kc)
	packA(kn, got, operand[T]{f: src}, off, ld, trans, i0, mc, p0, kc, alpha, nil)
	for i := range mp {
		for p := range kc {
			var want T
			if i < mc {
				want = alpha * at(i0+i, p0+p)
			}
			x := i/kn.mr*kn.mr*kc + p*kn.mr + i%kn.mr
			if got[x] != want {
				t.Fatalf("%s packA trans=%v mc=%d kc=%d ld=%d alpha=%g: row %d depth %d at [%d] = %g, want %g",
					kn.name, trans, mc, kc, ld, alpha, i, p, x, got[x], want)
			}
		}
	}
	checkGuard(t, kn.name+" packA", got[mp*kc:])
}

// testPackB packs a kc×width block of op(B) at (1, 2) and compares it with
// dst[q·nr·kc + p·nr + c] = op(B)[1+p][2+q·nr+c], 0 past the block.
func testPackB[T Float](t *testing.T, r *rand.Rand, kn *gemmKernel[T], trans bool, nc, kc, pad int) {
	t.Helper()
	const p0, j0, off = 1, 2, 3
	rows, cols := p0+kc, j0+nc
	if trans {
		rows, cols = cols, rows
	}
	src, ld := packSource[T](r, rows, cols, pad, off)
	at := func(p, j int) T {
		if trans {
			return src[off+j*ld+p]
		}
		return src[off+p*ld+j]
	}
	np := roundUp(nc, kn.nr)
	got := packDst[T](np * kc)
	packB(kn, got, operand[T]{f: src}, off, ld, trans, p0, kc, j0, nc, nil)
	for j := range np {
		for p := range kc {
			var want T
			if j < nc {
				want = at(p0+p, j0+j)
			}
			x := j/kn.nr*kn.nr*kc + p*kn.nr + j%kn.nr
			if got[x] != want {
				t.Fatalf("%s packB trans=%v nc=%d kc=%d ld=%d: column %d depth %d at [%d] = %g, want %g",
					kn.name, trans, nc, kc, ld, j, p, x, got[x], want)
			}
		}
	}
	checkGuard(t, kn.name+" packB", got[np*kc:])
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
