package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sharedACases are products whose op(A) the shared-mode driver packs once
// and several column chunks or blocks of C read: few rows (M not a
// multiple of any kernel's mr), many columns, several kc slices.
var sharedACases = []gemmCase{
	{tb: true, m: 37, n: 700, k: 400, alpha: 1, beta: 0, batch: 1, pad: [3]int{1, 0, 2}, nanC: true},
	{ta: true, m: 29, n: 900, k: 350, alpha: 1, beta: 0.5, batch: 1, pad: [3]int{0, 3, 1}, off: [3]int{2, 1, 3}},
	{m: 13, n: 2100, k: 90, alpha: 1, beta: 1, batch: 1, off: [3]int{1, 0, 0}},
}

// runShared runs g through the blocked driver on kn with fresh jobs and
// reports whether the call packed a shared A.
func runShared[T Float](kn *gemmKernel[T], g GemmArgs, a, b operand[T], c []T) bool {
	var jobs freeList[gemmJob[T]]
	gemmBlocked(kn, &jobs, g, a, b, c)
	return len(jobs.free) == 1 && cap(jobs.free[0].abuf) > 0
}

// checkSharedA runs the one-matrix product g (C at OffC, row stride LdC)
// in shared mode, which must pack a shared A (its column chunks need
// a second worker; its blocks N > nc), and compares C bit for bit
// with the same product run as every matrix of a batch long enough for
// batch mode, where each matrix packs its own A block by block.
func checkSharedA[T Float](t *testing.T, name string, kn *gemmKernel[T], g GemmArgs, a, b operand[T], c []T) {
	t.Helper()
	ext := (g.M-1)*g.LdC + g.N
	nb := 2 * Workers()
	batch := make([]T, nb*ext)
	for i := range nb {
		copy(batch[i*ext:], c[g.OffC:g.OffC+ext])
	}
	gb := g
	gb.Batch, gb.StrideA, gb.StrideB, gb.OffC, gb.StrideC = nb, 0, 0, 0, ext
	if runShared(kn, gb, a, b, batch) {
		t.Fatalf("%s: the batch reference packed a shared A", name)
	}
	if !runShared(kn, g, a, b, c) && (Workers() > 1 || g.N > kn.nc) {
		t.Fatalf("%s: no shared A was packed", name)
	}
	for i := range nb {
		for r := range g.M {
			for x := range g.N {
				got, want := c[g.OffC+r*g.LdC+x], batch[i*ext+r*g.LdC+x]
				if math.Float64bits(float64(got)) != math.Float64bits(float64(want)) {
					t.Fatalf("%s: C[%d][%d] = %g, packing A per block (batch matrix %d) %g", name, r, x, got, i, want)
				}
			}
		}
	}
}

// sharedAKernel runs sharedACases on kn over float operands: bit for bit
// against batch mode, and against the float64 reference.
func sharedAKernel[T Float](t *testing.T, r *rand.Rand, kn gemmKernel[T], eps float64) {
	t.Helper()
	small := kn
	small.mc, small.kc, small.nc = 12, 8, 32
	for _, k := range []*gemmKernel[T]{&kn, &small} {
		for _, tc := range sharedACases {
			g, la, lb, lc := tc.args()
			a, b, c := gemmRand(r, la), gemmRand(r, lb), gemmRand(r, lc)
			a, b, c = gemmToF64(gemmToT[T](a)), gemmToF64(gemmToT[T](b)), gemmToF64(gemmToT[T](c))
			want, mag := gemmRef(g, a, b, c)
			got := gemmToT[T](c)
			name := k.name + " " + tc.String()
			checkSharedA(t, name, k, g, operand[T]{f: gemmToT[T](a)}, operand[T]{f: gemmToT[T](b)}, got)
			gemmCheck(t, name, g, got, c, want, mag, eps)
		}
	}
}

// TestGemmSharedA checks the shared A of column chunks and blocks (every
// float32 kernel of this build, the float64 kernel, and the bfloat16 pair
// kernel: the assembly where the CPU has it, else its Go twin)
// against products that pack A per block.
func TestGemmSharedA(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	asm, _ := sgemmAsmKernels()
	kernels := []gemmKernel[float32]{sgemmGoKernel, go12x32}
	if raceEnabled {
		kernels = kernels[:1] // the Go 12×32 tile's sweep is the slowest part under -race
	}
	for _, kn := range append(kernels, asm...) {
		sharedAKernel(t, r, kn, gemmEps32)
	}
	sharedAKernel(t, r, dgemmKernel, gemmEps64)
	// The pair kernel's Go twin is slow: it stands in only where the
	// assembly is missing (the other tests compare the two bit for bit).
	kn, cases := sbgemm, sharedACases
	if kn == nil {
		kn = goPairKernel(&gemmKernel[float32]{mr: 12, nr: 32, mc: 240, kc: 384, nc: 2048, pairs: true})
		if raceEnabled {
			cases = cases[2:] // the shortest depth: the twin is slowest under -race
		}
	}
	for _, tc := range cases {
		g, la, lb, lc := tc.args()
		ah, bh := gemmHalfBits(r, la, true), gemmHalfBits(r, lb, true)
		c := gemmToT[float32](gemmRand(r, lc))
		got := append([]float32(nil), c...)
		name := kn.name + " " + tc.String()
		checkSharedA(t, name, kn, g, operand[float32]{h: ah, bf16: true}, operand[float32]{h: bh, bf16: true}, got)
		af, bf := make([]float32, la), make([]float32, lb)
		halfToF32(af, ah, true)
		halfToF32(bf, bh, true)
		ref, mag := gemmRef(g, gemmToF64(af), gemmToF64(bf), gemmToF64(c))
		gemmCheck(t, name, g, got, gemmToF64(c), ref, mag, gemmEps32)
	}
}

// TestGemmSharedAOrderedBatch runs a batch into one shared C (done matrix
// by matrix in shared mode), each matrix with its own A, which the shared
// A must repack per matrix: bit for bit against one call per matrix.
func TestGemmSharedAOrderedBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	tc := gemmCase{m: 37, n: 700, k: 300, alpha: 1, beta: 0.5, batch: 3, bcast: [3]bool{false, false, true}}
	kn := sgemm
	kn.nc = 256 // three blocks of C, whatever the workers
	g, la, lb, lc := tc.args()
	a, b := gemmToT[float32](gemmRand(r, la)), gemmToT[float32](gemmRand(r, lb))
	c := gemmToT[float32](gemmRand(r, lc))
	got, want := append([]float32(nil), c...), append([]float32(nil), c...)
	if !runShared(&kn, g, operand[float32]{f: a}, operand[float32]{f: b}, got) {
		t.Fatal("no shared A was packed")
	}
	one := g
	one.Batch = 1
	for i := range tc.batch {
		one.OffA, one.OffB = g.OffA+i*g.StrideA, g.OffB+i*g.StrideB
		runShared(&kn, one, operand[float32]{f: a}, operand[float32]{f: b}, want)
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("c[%d] = %g, one call per matrix %g", i, got[i], want[i])
		}
	}
}
