package kernels

import (
	"fmt"
	"unsafe"
)

// GemmArgs is C = alpha·op(A)·op(B) + beta·C over Batch row-major matrices
// (see device.Gemm); offsets are in elements.
//
// op(A) is M×K: A is stored M×K with row stride LdA, or K×M when TransA.
// op(B) is K×N: B is stored K×N with row stride LdB, or N×K when TransB.
// C is M×N with row stride LdC. Matrix i of the batch starts at
// OffX + i·StrideX; a stride of 0 reuses one matrix for the whole batch
// (for C, the products then accumulate into it in batch order). Batch 0
// means 1. With Beta 0, C's old contents are ignored, even NaN; with Alpha
// 0 or K 0, A and B are not read and C becomes beta·C.
type GemmArgs struct {
	TransA, TransB   bool
	M, N, K          int
	Alpha, Beta      float64
	OffA, OffB, OffC int
	LdA, LdB, LdC    int
	Batch            int
	StrideA, StrideB int
	StrideC          int
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C for every matrix of the
// batch. It panics, naming the operand, if a dimension, stride or leading
// dimension is negative or too small, or a slice too short.
//
// float32 runs the packed, cache-blocked path with the fastest micro-kernel
// this CPU allows (AVX2+FMA assembly, else pure Go) on all workers; float64
// runs the same blocking with a pure-Go kernel. Tiny matrices take direct
// loops. Steady-state calls allocate nothing.
func Gemm[T Float](g GemmArgs, a, b, c []T) {
	GemmBias(g, a, b, nil, c)
}

// GemmBias is Gemm with a bias added to every row of every C, in the
// GEMM's own store: C = alpha·op(A)·op(B) + (beta·C + bias), bias[j]
// going to column j (bias nil: Gemm; otherwise at least N values). The
// bias joins beta·C before the product does: the first K panel's store
// starts from beta·C + bias and each panel's partial product is added to
// it in K order, so that with beta 0 the result is bit for bit that of
// filling C with the bias and calling Gemm with beta 1. With a batch,
// every matrix adds the bias (StrideC 0: once per matrix).
func GemmBias[T Float](g GemmArgs, a, b, bias, c []T) {
	g.check("Gemm", len(a), len(b), len(c))
	checkBias("Gemm", bias, g.N)
	var z T
	if unsafe.Sizeof(z) == 4 {
		gemmBias(&sgemm, &sgemmJobs, g, operand[float32]{f: as[float32](a)}, operand[float32]{f: as[float32](b)}, as[float32](bias), as[float32](c))
		return
	}
	gemmBias(&dgemmKernel, &dgemmJobs, g, operand[float64]{f: as[float64](a)}, operand[float64]{f: as[float64](b)}, as[float64](bias), as[float64](c))
}

// GemmHalf is Gemm for float32 C with A and B held as 16-bit floats (bit
// patterns; aBF16 and bBF16 say bfloat16 for each, else IEEE binary16).
// Leading dimensions, offsets and strides count elements, as in Gemm. No
// float32 copy of A or B is ever made:
//
//   - both bfloat16, alpha 1, on a CPU with AVX512_BF16: the VDPBF16PS
//     pair kernel reads bfloat16 pairs and accumulates in float32 with the
//     instruction's rounding (see doc.go); its results agree with Gemm on
//     the widened operands to float32 rounding of the sum, not bit for bit;
//     with AMX-BF16 as well (and K ≥ 32), the AMX kernel on TDPBF16PS
//     does the same with that instruction's rounding (gemm_amx.go);
//   - otherwise elements are widened exactly to float32 while they are
//     packed, and the result equals, bit for bit, Gemm on the widened
//     operands (except below the size where Gemm takes direct loops:
//     there it agrees to rounding).
func GemmHalf(g GemmArgs, aBits, bBits []uint16, aBF16, bBF16 bool, c []float32) {
	GemmHalfBias(g, aBits, bBits, aBF16, bBF16, nil, c)
}

// GemmHalfBias is GemmHalf with GemmBias's float32 bias (nil: none): a
// 16-bit output narrowed from C after the call is rounded once, after
// the bias is added.
func GemmHalfBias(g GemmArgs, aBits, bBits []uint16, aBF16, bBF16 bool, bias, c []float32) {
	g.check("GemmHalf", len(aBits), len(bBits), len(c))
	checkBias("GemmHalf", bias, g.N)
	a := operand[float32]{h: aBits, bf16: aBF16}
	b := operand[float32]{h: bBits, bf16: bBF16}
	gemmBias(halfKernel(g, aBF16, bBF16), &sgemmJobs, g, a, b, bias, c)
}

// halfKernel is the kernel GemmHalf runs g on: a pair kernel for
// bfloat16 operands with alpha 1 where the CPU has one, else sgemm.
func halfKernel(g GemmArgs, aBF16, bBF16 bool) *gemmKernel[float32] {
	if p := pairKernel(g.K); aBF16 && bBF16 && g.Alpha == 1 && p != nil {
		return p
	}
	return &sgemm
}

// sbgemm is the bfloat16 pair kernel of this machine, or nil; amxgemm the
// AMX kernel, or nil.
var (
	sbgemm  = selectSbgemm()
	amxgemm = selectAMX()
)

// pairKernel is the kernel that bfloat16 products of depth k with alpha 1
// run on: the AMX kernel where the CPU allows it and k ≥ amxMinK, else
// the pair kernel, or nil when there is neither.
func pairKernel(k int) *gemmKernel[float32] {
	if amxgemm != nil && k >= amxMinK {
		return amxgemm
	}
	return sbgemm
}

// The reusable jobs of each element type.
var (
	sgemmJobs freeList[gemmJob[float32]]
	dgemmJobs freeList[gemmJob[float64]]
)

// as views a slice of a type with U's size and representation as []U.
func as[U, T Float](s []T) []U {
	return unsafe.Slice((*U)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// gemm handles the trivial cases and picks direct loops or the blocked
// path for the rest.
func gemm[T Float](kn *gemmKernel[T], jobs *freeList[gemmJob[T]], g GemmArgs, a, b operand[T], c []T) {
	gemmBias(kn, jobs, g, a, b, nil, c)
}

// gemmBias is gemm with GemmBias's bias (nil: none).
func gemmBias[T Float](kn *gemmKernel[T], jobs *freeList[gemmJob[T]], g GemmArgs, a, b operand[T], bias, c []T) {
	if g.M == 0 || g.N == 0 {
		return
	}
	if g.K == 0 || g.Alpha == 0 {
		scaleC(g, bias, c)
		return
	}
	if a.h == nil && b.h == nil && g.M*g.N*g.K < gemmSmall {
		gemmDirect(g, a.f, b.f, bias, c)
		return
	}
	gemmBlockedBias(kn, jobs, g, nil, a, b, bias, c)
}

// scaleC sets every C of the batch to beta·C + bias (zero or the bias
// when beta is 0).
func scaleC[T Float](g GemmArgs, bias, c []T) {
	beta := T(g.Beta)
	for bi := range max(g.Batch, 1) {
		for i := range g.M {
			at := g.OffC + bi*g.StrideC + i*g.LdC
			row := c[at : at+g.N]
			switch {
			case bias != nil:
				mergeTile(row, 0, 0, 1, bias, 0, g.N, beta, betaMode(g.Beta))
			case beta == 0:
				clear(row)
			case beta != 1:
				for j := range row {
					row[j] *= beta
				}
			}
		}
	}
}

// gemmDirect computes small products with plain loops, matrix by matrix in
// batch order: four elements of a C row at a time, each a dot product
// walked with fixed strides, so that four sums are in flight at once.
func gemmDirect[T Float](g GemmArgs, a, b, bias, c []T) {
	alpha, beta := T(g.Alpha), T(g.Beta)
	// op(A)[i][p] = a[oa + i·ai + p·ap], op(B)[p][j] = b[ob + p·bp + j·bj].
	ai, ap, bp, bj := g.LdA, 1, g.LdB, 1
	if g.TransA {
		ai, ap = 1, g.LdA
	}
	if g.TransB {
		bp, bj = 1, g.LdB
	}
	put := func(row []T, j int, s T) {
		switch {
		case bias == nil && beta == 0:
			row[j] = alpha * s
		case bias == nil:
			row[j] = alpha*s + beta*row[j]
		case beta == 0:
			row[j] = alpha*s + bias[j]
		default:
			row[j] = alpha*s + (beta*row[j] + bias[j])
		}
	}
	for bi := range max(g.Batch, 1) {
		oa, ob, oc := g.OffA+bi*g.StrideA, g.OffB+bi*g.StrideB, g.OffC+bi*g.StrideC
		for i := range g.M {
			row := c[oc+i*g.LdC : oc+i*g.LdC+g.N]
			j := 0
			for ; j+4 <= len(row); j += 4 {
				var s0, s1, s2, s3 T
				x, y := oa+i*ai, ob+j*bj
				for range g.K {
					av := a[x]
					s0 += av * b[y]
					s1 += av * b[y+bj]
					s2 += av * b[y+2*bj]
					s3 += av * b[y+3*bj]
					x += ap
					y += bp
				}
				put(row, j, s0)
				put(row, j+1, s1)
				put(row, j+2, s2)
				put(row, j+3, s3)
			}
			for ; j < len(row); j++ {
				var s T
				x, y := oa+i*ai, ob+j*bj
				for range g.K {
					s += a[x] * b[y]
					x += ap
					y += bp
				}
				put(row, j, s)
			}
		}
	}
}

// check panics unless every matrix the call touches lies inside its slice.
func (g GemmArgs) check(fn string, la, lb, lc int) {
	if g.M < 0 || g.N < 0 || g.K < 0 || g.Batch < 0 {
		panic(fmt.Sprintf("kernels.%s: negative size M=%d N=%d K=%d Batch=%d", fn, g.M, g.N, g.K, g.Batch))
	}
	if g.M == 0 || g.N == 0 {
		return
	}
	batch := max(g.Batch, 1)
	ar, ac := g.M, g.K
	if g.TransA {
		ar, ac = ac, ar
	}
	br, bc := g.K, g.N
	if g.TransB {
		br, bc = bc, br
	}
	if g.K > 0 && g.Alpha != 0 {
		checkOperand(fn, "A", la, g.OffA, g.StrideA, g.LdA, batch, ar, ac)
		checkOperand(fn, "B", lb, g.OffB, g.StrideB, g.LdB, batch, br, bc)
	}
	checkOperand(fn, "C", lc, g.OffC, g.StrideC, g.LdC, batch, g.M, g.N)
}

// checkOperand panics unless batch matrices of rows×cols, row stride ld,
// starting at off and stride apart, fit in n elements.
func checkOperand(fn, name string, n, off, stride, ld, batch, rows, cols int) {
	if off < 0 || stride < 0 || ld < cols {
		panic(fmt.Sprintf("kernels.%s: %s has offset %d, stride %d, leading dimension %d for %d×%d matrices",
			fn, name, off, stride, ld, rows, cols))
	}
	if rows == 0 || cols == 0 {
		return
	}
	if end := off + (batch-1)*stride + (rows-1)*ld + cols; end > n {
		panic(fmt.Sprintf("kernels.%s: %s needs %d elements (offset %d, stride %d, ld %d, batch %d of %d×%d), has %d",
			fn, name, end, off, stride, ld, batch, rows, cols, n))
	}
}
