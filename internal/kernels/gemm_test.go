package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// gemmCase is one GEMM problem as the tests build it: leading dimensions
// are the minimum plus pad, batch strides the minimum plus gap (or 0 when
// the operand is broadcast), and every operand starts at an offset.
type gemmCase struct {
	ta, tb      bool
	m, n, k     int
	alpha, beta float64
	batch       int
	pad         [3]int  // extra leading dimension of A, B, C
	off         [3]int  // offsets of A, B, C
	bcast       [3]bool // batch stride 0 for A, B, C
	nanC        bool    // fill C with NaN (only meaningful with beta 0)
}

func (tc gemmCase) String() string {
	return fmt.Sprintf("ta=%v tb=%v m=%d n=%d k=%d alpha=%g beta=%g batch=%d pad=%v off=%v bcast=%v nan=%v",
		tc.ta, tc.tb, tc.m, tc.n, tc.k, tc.alpha, tc.beta, tc.batch, tc.pad, tc.off, tc.bcast, tc.nanC)
}

// args lays the case out and returns its GemmArgs and the slice lengths.
func (tc gemmCase) args() (g GemmArgs, la, lb, lc int) {
	ar, ac := tc.m, tc.k
	if tc.ta {
		ar, ac = ac, ar
	}
	br, bc := tc.k, tc.n
	if tc.tb {
		br, bc = bc, br
	}
	batch := max(tc.batch, 1)
	layout := func(i, rows, cols int) (ld, stride, length int) {
		ld = cols + tc.pad[i]
		if !tc.bcast[i] {
			stride = rows*ld + 3
		}
		return ld, stride, tc.off[i] + (batch-1)*stride + rows*ld + 2
	}
	g = GemmArgs{TransA: tc.ta, TransB: tc.tb, M: tc.m, N: tc.n, K: tc.k, Alpha: tc.alpha, Beta: tc.beta,
		OffA: tc.off[0], OffB: tc.off[1], OffC: tc.off[2], Batch: tc.batch}
	g.LdA, g.StrideA, la = layout(0, ar, ac)
	g.LdB, g.StrideB, lb = layout(1, br, bc)
	g.LdC, g.StrideC, lc = layout(2, tc.m, tc.n)
	return g, la, lb, lc
}

// gemmRef is the float64 triple loop: the result, and for each element a
// bound on the magnitudes that entered it (for the tolerance).
func gemmRef(g GemmArgs, a, b, c []float64) (out, mag []float64) {
	out = append([]float64(nil), c...)
	mag = make([]float64, len(c))
	m, n, k := g.M, g.N, g.K
	opA, opBt := make([]float64, m*k), make([]float64, n*k) // op(A) (M, K), op(B)ᵀ (N, K)
	for bi := range max(g.Batch, 1) {
		oa, ob, oc := g.OffA+bi*g.StrideA, g.OffB+bi*g.StrideB, g.OffC+bi*g.StrideC
		for i := range m {
			for p := range k {
				if g.TransA {
					opA[i*k+p] = a[oa+p*g.LdA+i]
				} else {
					opA[i*k+p] = a[oa+i*g.LdA+p]
				}
			}
		}
		for j := range n {
			for p := range k {
				if g.TransB {
					opBt[j*k+p] = b[ob+j*g.LdB+p]
				} else {
					opBt[j*k+p] = b[ob+p*g.LdB+j]
				}
			}
		}
		for i := range m {
			ar := opA[i*k : i*k+k]
			for j := range n {
				br := opBt[j*k : j*k+k]
				var s, sa float64
				for p, av := range ar {
					x := av * br[p]
					s += x
					if x < 0 { // not math.Abs: its unsafe cast is slow under -race (checkptr)
						x = -x
					}
					sa += x
				}
				idx := oc + i*g.LdC + j
				if g.Beta == 0 {
					out[idx] = g.Alpha * s
					mag[idx] = math.Abs(g.Alpha) * sa
				} else {
					out[idx] = g.Alpha*s + g.Beta*out[idx]
					mag[idx] = math.Abs(g.Alpha)*sa + math.Abs(g.Beta)*(math.Abs(out[idx])+mag[idx])
				}
			}
		}
	}
	return out, mag
}

// gemmInC reports which elements of c belong to some C matrix.
func gemmInC(g GemmArgs, n int) []bool {
	in := make([]bool, n)
	for bi := range max(g.Batch, 1) {
		for i := range g.M {
			for j := range g.N {
				in[g.OffC+bi*g.StrideC+i*g.LdC+j] = true
			}
		}
	}
	return in
}

func gemmRand(r *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 2*r.Float64() - 1
	}
	return x
}

func gemmToT[T Float](x []float64) []T {
	y := make([]T, len(x))
	for i, v := range x {
		y[i] = T(v)
	}
	return y
}

// gemmCheck compares got with the reference: C elements within a
// tolerance of (K+8)·eps·magnitude, everything else unchanged.
func gemmCheck[T Float](t *testing.T, name string, g GemmArgs, got []T, c0, want, mag []float64, eps float64) {
	t.Helper()
	in := gemmInC(g, len(c0))
	bad := 0
	for i, v := range got {
		x := float64(v)
		if !in[i] {
			if x != c0[i] && !(math.IsNaN(x) && math.IsNaN(c0[i])) {
				t.Errorf("%s: element %d outside C changed: %g, want %g", name, i, x, c0[i])
				bad++
			}
		} else if tol := float64(g.K+8) * eps * (mag[i] + 1e-30); math.IsNaN(x) || math.Abs(x-want[i]) > tol {
			t.Errorf("%s: C element %d = %g, want %g (tol %g)", name, i, x, want[i], tol)
			bad++
		}
		if bad > 5 {
			t.FailNow()
		}
	}
}

const (
	gemmEps32 = 0x1p-23
	gemmEps64 = 0x1p-52
)

// gemmRunCase runs one case through Gemm[T] (or, with kn set, the blocked
// driver on that kernel) and checks it.
func gemmRunCase[T Float](t *testing.T, r *rand.Rand, tc gemmCase, kn *gemmKernel[T]) {
	t.Helper()
	g, la, lb, lc := tc.args()
	a, b, c := gemmRand(r, la), gemmRand(r, lb), gemmRand(r, lc)
	// Round the inputs to T so that the reference sees what T sees.
	a, b, c = gemmToF64(gemmToT[T](a)), gemmToF64(gemmToT[T](b)), gemmToF64(gemmToT[T](c))
	if tc.nanC {
		for i := range c {
			c[i] = math.NaN()
		}
	}
	want, mag := gemmRef(g, a, b, c)
	got := gemmToT[T](c)
	if kn == nil {
		Gemm(g, gemmToT[T](a), gemmToT[T](b), got)
	} else {
		var jobs freeList[gemmJob[T]]
		gemmBlocked(kn, &jobs, g, operand[T]{f: gemmToT[T](a)}, operand[T]{f: gemmToT[T](b)}, got)
	}
	var z T
	eps := gemmEps64
	if any(z) == any(float32(0)) {
		eps = gemmEps32
	}
	gemmCheck(t, tc.String(), g, got, c, want, mag, eps)
}

func gemmToF64[T Float](x []T) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// gemmCases is the shared table: every transpose combination over odd
// sizes, padded leading dimensions and offsets, each beta, then batches;
// large adds matrices of up to 300 (1: one 257³ product, 2: two).
func gemmCases(large int) []gemmCase {
	var cs []gemmCase
	shapes := [][3]int{{1, 1, 1}, {7, 7, 7}, {17, 17, 17}, {33, 33, 33}, {65, 65, 65},
		{1, 9, 13}, {13, 1, 5}, {6, 16, 1}, {5, 300, 3}, {300, 5, 70}, {12, 32, 300},
		{37, 130, 129}, {129, 37, 20}, {7, 2100, 9}}
	betas := []float64{0, 1, 0.5}
	i := 0
	for _, s := range shapes {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				beta := betas[i%3]
				cs = append(cs, gemmCase{ta: ta, tb: tb, m: s[0], n: s[1], k: s[2],
					alpha: []float64{1, 1.5, -0.75}[i%3], beta: beta, batch: 1,
					pad: [3]int{i % 4, (i + 1) % 3, i % 5}, off: [3]int{i % 3, 2, (i + 1) % 4},
					nanC: beta == 0 && i%2 == 0})
				i++
			}
		}
	}
	for _, s := range [][3]int{{7, 9, 5}, {33, 40, 17}, {70, 20, 65}} {
		for _, bc := range [][3]bool{{}, {true, false, false}, {false, true, false}, {false, false, true}} {
			for _, beta := range betas {
				cs = append(cs, gemmCase{ta: i%2 == 0, tb: i%3 == 0, m: s[0], n: s[1], k: s[2],
					alpha: 0.8, beta: beta, batch: 3, pad: [3]int{1, 0, 2}, off: [3]int{1, 4, 3},
					bcast: bc, nanC: beta == 0 && !bc[2]})
				i++
			}
		}
	}
	if large > 0 {
		cs = append(cs, gemmCase{ta: true, tb: true, m: 257, n: 257, k: 257, alpha: -1.5, beta: 0, batch: 1, nanC: true})
	}
	if large > 1 {
		cs = append(cs, gemmCase{m: 257, n: 257, k: 257, alpha: 1, beta: 0.5, batch: 1, pad: [3]int{3, 1, 2}, off: [3]int{1, 2, 3}})
	}
	if large > 0 {
		cs = append(cs,
			gemmCase{tb: true, m: 100, n: 290, k: 130, alpha: 0.5, beta: 1, batch: 1, pad: [3]int{0, 5, 1}},
			gemmCase{ta: true, m: 290, n: 33, k: 300, alpha: 2, beta: 0.5, batch: 1, off: [3]int{5, 0, 0}},
			// Few rows, enough work to split C's columns across workers.
			gemmCase{tb: true, m: 30, n: 700, k: 400, alpha: 1, beta: 0, batch: 1, pad: [3]int{1, 0, 2}})
	}
	// Batches long enough to share out whole matrices, with a broadcast
	// operand; and, big enough to run in parallel, products into one
	// shared C (stride 0), which must still accumulate in batch order.
	cs = append(cs,
		gemmCase{ta: true, m: 30, n: 50, k: 40, alpha: 1.5, beta: 0.5, batch: 6, pad: [3]int{1, 2, 3}, off: [3]int{2, 1, 0}},
		gemmCase{tb: true, m: 64, n: 33, k: 70, alpha: -1, beta: 0, batch: 5, bcast: [3]bool{false, true, false}, nanC: true},
		gemmCase{m: 200, n: 200, k: 128, alpha: 1, beta: 0.5, batch: 4, bcast: [3]bool{false, false, true}},
		gemmCase{tb: true, m: 50, n: 120, k: 70, alpha: 1, beta: 1, batch: 3, bcast: [3]bool{true, false, false}})
	// alpha 0 and K 0 never read A or B.
	cs = append(cs, gemmCase{m: 9, n: 20, k: 30, alpha: 0, beta: 0.5, batch: 2},
		gemmCase{m: 9, n: 20, k: 0, alpha: 1, beta: 0, batch: 1, nanC: true},
		gemmCase{m: 40, n: 0, k: 7, alpha: 1, batch: 1})
	return cs
}

func TestGemmF32(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	large := 2
	if poolDropsItems() { // under -race: keep the run short
		large = 1
	}
	for _, tc := range gemmCases(large) {
		gemmRunCase[float32](t, r, tc, nil)
	}
	t.Logf("float32 kernel: %s", sgemm.name)
}

func TestGemmF64(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	large := 2
	if poolDropsItems() { // under -race: keep the run short
		large = 0
	}
	for _, tc := range gemmCases(large) {
		gemmRunCase[float64](t, r, tc, nil)
	}
}

// TestGemmKernelsSmallBlocks runs every float32 micro-kernel of this build
// and the float64 one through the driver with tiny block sizes, so that
// small matrices cross many mc, kc and nc block edges.
func TestGemmKernelsSmallBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	asm, _ := sgemmAsmKernels()
	kernels := append([]gemmKernel[float32]{sgemmGoKernel, go12x32}, asm...)
	cases := []gemmCase{
		{m: 40, n: 70, k: 45, alpha: 1.25, beta: 0.5, batch: 1, pad: [3]int{1, 2, 3}},
		{ta: true, m: 31, n: 50, k: 19, alpha: -1, beta: 1, batch: 2, pad: [3]int{0, 1, 0}},
		{tb: true, m: 13, n: 33, k: 64, alpha: 2, beta: 0, batch: 1, nanC: true},
		{ta: true, tb: true, m: 26, n: 17, k: 9, alpha: 0.5, beta: 0.5, batch: 3, bcast: [3]bool{false, false, true}},
		{m: 1, n: 1, k: 1, alpha: 1, beta: 0, batch: 1, nanC: true},
		{ta: true, tb: true, m: 2, n: 3, k: 1, alpha: -2, beta: 1, batch: 2, pad: [3]int{1, 1, 1}},
		{m: 20, n: 40, k: 30, alpha: 1, beta: 0.5, batch: 5, pad: [3]int{2, 1, 0}},
	}
	for _, kn := range kernels {
		// kc 24: kcFor cuts depth 45 into 24 + 21 and 64 into 24 + 24 + 16.
		for _, kc := range []int{8, 24} {
			kn.mc, kn.kc, kn.nc = 12, kc, 32
			for _, tc := range cases {
				gemmRunCase(t, r, tc, &kn)
			}
		}
	}
	dk := dgemmKernel
	dk.mc, dk.kc, dk.nc = 12, 8, 16
	for _, tc := range cases {
		gemmRunCase(t, r, tc, &dk)
	}
}

// TestGemmPackers checks each kernel's whole-panel packers (assembly or
// Go) against the generic packing loops, bit for bit, over depths with
// and without a tail of 8.
func TestGemmPackers(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	asm, _ := sgemmAsmKernels()
	for _, kn := range asm {
		testPackers(t, r, kn)
	}
	testPackers(t, r, sgemmGoKernel)
	testPackers(t, r, go12x32)
	testPackers(t, r, dgemmKernel)
}

// go12x32 is a pure-Go kernel of the AVX-512 kernel's shape, with its
// packers, so that the driver and the packers of that shape are tested on
// every CPU, not only where AVX-512 runs.
var go12x32 = gemmKernel[float32]{name: "go-12x32", mr: 12, nr: 32, mc: 240, kc: 192, nc: 2048,
	full: func(k int, a, b, c []float32, ldc int, beta float32, mode int) {
		microGo(12, 32, k, a, b, c, ldc, beta, mode)
	},
	half: func(k int, a, b, c []float32, ldc int, beta float32, mode int) {
		microGoRows(12, 6, 32, k, a, b, c, ldc, beta, mode)
	},
	packA: packRows12[float32], packBT: packCols32[float32]}

func testPackers[T Float](t *testing.T, r *rand.Rand, kn gemmKernel[T]) {
	plain := kn
	plain.packA, plain.packAT, plain.packB, plain.packBT = nil, nil, nil, nil
	for _, sz := range [][3]int{{13, 37, 40}, {6, 8, 16}, {20, 1, 33}, {7, 64, 17}} {
		mc, kc, nc := sz[0], sz[1], sz[2]
		for _, trans := range []bool{false, true} {
			ld, off := max(mc, kc, nc)+3, 5
			src := operand[T]{f: gemmToT[T](gemmRand(r, off+(max(mc, kc, nc)+2)*ld))}
			got := make([]T, max(roundUp(mc, kn.mr), roundUp(nc, kn.nr))*kc)
			want := make([]T, len(got))
			packA(&kn, got, src, off, ld, trans, 2, mc, 1, kc, T(-1.5), nil)
			packA(&plain, want, src, off, ld, trans, 2, mc, 1, kc, T(-1.5), nil)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s packA trans=%v %v: [%d] = %g, want %g", kn.name, trans, sz, i, got[i], want[i])
				}
			}
			packB(&kn, got, src, off, ld, trans, 1, kc, 2, nc, nil)
			packB(&plain, want, src, off, ld, trans, 1, kc, 2, nc, nil)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s packB trans=%v %v: [%d] = %g, want %g", kn.name, trans, sz, i, got[i], want[i])
				}
			}
		}
	}
}

// TestGemmAsmMatchesGo compares each assembly micro-kernel with the pure-Go
// micro-kernel of its shape on the same packed panels, for every mode.
func TestGemmAsmMatchesGo(t *testing.T) {
	asm, why := sgemmAsmKernels()
	if len(asm) == 0 {
		t.Skipf("no assembly micro-kernel to compare: %s", why)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, kn := range asm {
		mr, nr := kn.mr, kn.nr
		ldc := nr + 5
		for _, k := range []int{0, 1, 3, 4, 5, 64, 255, 300} {
			a := gemmToT[float32](gemmRand(r, mr*k))
			b := gemmToT[float32](gemmRand(r, nr*k))
			c0 := gemmToT[float32](gemmRand(r, (mr-1)*ldc+nr))
			for mode, beta := range []float32{0, 1, -0.625} {
				got := append([]float32(nil), c0...)
				want := append([]float32(nil), c0...)
				kn.full(k, a, b, got, ldc, beta, mode)
				microGo(mr, nr, k, a, b, want, ldc, beta, mode)
				gemmCloseTiles(t, kn.name, k, mode, got, want)
				if kn.half != nil { // the first mr/2 rows; the others untouched
					got, want = append(got[:0], c0...), append(want[:0], c0...)
					kn.half(k, a, b, got, ldc, beta, mode)
					microGoRows(mr, mr/2, nr, k, a, b, want, ldc, beta, mode)
					gemmCloseTiles(t, kn.name+" half", k, mode, got, want)
				}
			}
		}
	}
}

// gemmCloseTiles compares an assembly kernel's tile with its Go twin's
// within the rounding of a k-long sum.
func gemmCloseTiles(t *testing.T, name string, k, mode int, got, want []float32) {
	t.Helper()
	for i := range got {
		tol := float32(k+4) * gemmEps32 * float32(k+1)
		if d := got[i] - want[i]; d > tol || d < -tol || got[i] != got[i] {
			t.Fatalf("%s k=%d mode=%d: c[%d] = %g, Go kernel %g", name, k, mode, i, got[i], want[i])
		}
	}
}

// TestGemmHalf checks the 16-bit-input GEMM against widening first.
func TestGemmHalf(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for i, tc := range []gemmCase{
		{m: 33, n: 70, k: 17, alpha: 1.5, beta: 0.5, batch: 1, pad: [3]int{1, 2, 0}, off: [3]int{3, 1, 2}},
		{ta: true, m: 65, n: 20, k: 300, alpha: 1, beta: 0, batch: 2, nanC: true},
		{tb: true, m: 7, n: 129, k: 40, alpha: -1, beta: 1, batch: 1, pad: [3]int{2, 3, 1}},
		{ta: true, tb: true, m: 50, n: 50, k: 50, alpha: 0.25, beta: 0.5, batch: 3, bcast: [3]bool{true, false, false}},
		{m: 2, n: 3, k: 2, alpha: 1, beta: 0, batch: 1},
	} {
		aBF, bBF := i%2 == 0, i%3 != 0
		g, la, lb, lc := tc.args()
		ah, bh := gemmHalfBits(r, la, aBF), gemmHalfBits(r, lb, bBF)
		af, bf := make([]float32, la), make([]float32, lb)
		halfToF32(af, ah, aBF)
		halfToF32(bf, bh, bBF)
		c := gemmToT[float32](gemmRand(r, lc))
		if tc.nanC {
			for j := range c {
				c[j] = float32(math.NaN())
			}
		}
		want := append([]float32(nil), c...)
		Gemm(g, af, bf, want)
		got := append([]float32(nil), c...)
		GemmHalf(g, ah, bh, aBF, bBF, got)
		ref, mag := gemmRef(g, gemmToF64(af), gemmToF64(bf), gemmToF64(c))
		gemmCheck(t, tc.String(), g, got, gemmToF64(c), ref, mag, gemmEps32)
		// Above the direct-loop size both take the same packed path, so
		// they agree bit for bit.
		exact := tc.m*tc.n*tc.k >= gemmSmall
		for j := range got {
			tol := float32(tc.k+8) * gemmEps32 * float32(mag[j]+1e-30)
			if exact && math.Float32bits(got[j]) != math.Float32bits(want[j]) ||
				!exact && math.Abs(float64(got[j]-want[j])) > float64(tol) {
				t.Fatalf("%v: GemmHalf c[%d] = %g, Gemm on widened inputs %g", tc, j, got[j], want[j])
			}
		}
	}
}

// gemmHalfBits returns n random bfloat16 or binary16 values in [-1, 1].
func gemmHalfBits(r *rand.Rand, n int, bf16 bool) []uint16 {
	h := make([]uint16, n)
	for i := range h {
		v := float32(2*r.Float64() - 1)
		if bf16 {
			h[i] = dtype.BF16FromF32(v)
		} else {
			h[i] = dtype.F16FromF32(v)
		}
	}
	return h
}

func TestGemmNoAllocs(t *testing.T) {
	const n = 256
	r := rand.New(rand.NewPCG(11, 12))
	a, b := gemmToT[float32](gemmRand(r, n*n)), gemmToT[float32](gemmRand(r, n*n))
	c := make([]float32, n*n)
	g := GemmArgs{M: n, N: n, K: n, Alpha: 1, LdA: n, LdB: n, LdC: n}
	const nh = 128
	gh := GemmArgs{M: nh, N: nh, K: nh, Alpha: 1, LdA: nh, LdB: nh, LdC: nh}
	ah, bh := make([]uint16, nh*nh), make([]uint16, nh*nh)
	for range 3 {
		Gemm(g, a, b, c)
		GemmHalf(gh, ah, bh, true, false, c)
	}
	// ParallelFor's wait groups and the GEMM's scratch sit on freeLists,
	// which the race detector does not thin as it does a sync.Pool, so the
	// count is exact under -race too.
	runs := 10
	if allocs := testing.AllocsPerRun(runs, func() { Gemm(g, a, b, c) }); allocs != 0 {
		t.Errorf("Gemm %d³ allocates %v times per call, want 0", n, allocs)
	}
	// A batch of matrices shared out whole.
	gb := GemmArgs{M: 64, N: 64, K: 64, Alpha: 1, LdA: 64, LdB: 64, LdC: 64, Batch: 16,
		StrideA: 64 * 64, StrideB: 0, StrideC: 64 * 64}
	Gemm(gb, a, b, c)
	if allocs := testing.AllocsPerRun(runs, func() { Gemm(gb, a, b, c) }); allocs != 0 {
		t.Errorf("Gemm batch of 16 64³ allocates %v times per call, want 0", allocs)
	}
	if allocs := testing.AllocsPerRun(runs, func() { GemmHalf(gh, ah, bh, true, false, c) }); allocs != 0 {
		t.Errorf("GemmHalf %d³ allocates %v times per call, want 0", nh, allocs)
	}
}

// poolDropsItems reports whether sync.Pool drops items on purpose, as it
// does under the race detector (the tests then use smaller problems).
func poolDropsItems() bool {
	var p sync.Pool
	for range 100 {
		p.Put(new(int))
		if p.Get() == nil {
			return true
		}
	}
	return false
}

// TestGemmConcurrent runs GEMMs from several goroutines at once, sharing
// the worker pool and the scratch lists.
func TestGemmConcurrent(t *testing.T) {
	const n = 70
	r := rand.New(rand.NewPCG(13, 14))
	a, b := gemmToT[float32](gemmRand(r, n*n)), gemmToT[float32](gemmRand(r, n*n))
	g := GemmArgs{TransB: true, M: n, N: n, K: n, Alpha: 1, LdA: n, LdB: n, LdC: n}
	want := make([]float32, n*n)
	Gemm(g, a, b, want)
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for range 4 {
		wg.Go(func() {
			c := make([]float32, n*n)
			for range 10 {
				Gemm(g, a, b, c)
				for i := range c {
					if c[i] != want[i] {
						errs <- fmt.Sprintf("c[%d] = %g, want %g", i, c[i], want[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestGemmPanics(t *testing.T) {
	ok := GemmArgs{M: 2, N: 3, K: 4, Alpha: 1, LdA: 4, LdB: 3, LdC: 3}
	for _, tc := range []struct {
		name       string
		g          GemmArgs
		la, lb, lc int
	}{
		{"short A", ok, 7, 12, 6},
		{"short B", ok, 8, 11, 6},
		{"short C", ok, 8, 12, 5},
		{"small ldc", GemmArgs{M: 2, N: 3, K: 4, Alpha: 1, LdA: 4, LdB: 3, LdC: 2}, 8, 12, 6},
		{"negative stride", GemmArgs{M: 2, N: 3, K: 4, Alpha: 1, LdA: 4, LdB: 3, LdC: 3, Batch: 2, StrideA: -8}, 16, 24, 12},
		{"negative size", GemmArgs{M: -1, N: 3, K: 4}, 8, 12, 6},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Gemm did not panic", tc.name)
				}
			}()
			Gemm(tc.g, make([]float32, tc.la), make([]float32, tc.lb), make([]float32, tc.lc))
		}()
	}
}

// TestKCFor: kcFor cuts a depth into the fewest slices of at most kc
// (one when it fits), all but the last a multiple of 8 of the same size,
// the last shorter by less than 8 per slice, and into fixed kc slices
// when gemmEvenDepth is off.
func TestKCFor(t *testing.T) {
	for _, kc := range []int{8, 24, 192, 256, 512} {
		kn := gemmKernel[float32]{kc: kc}
		for k := 1; k <= 5000; k++ {
			s := kn.kcFor(k)
			n := ceilDiv(k, kc)
			last := k - (ceilDiv(k, s)-1)*s
			if k <= kc {
				if s != kc {
					t.Fatalf("kc %d, depth %d: step %d, want one slice (%d)", kc, k, s, kc)
				}
				continue
			}
			if s > kc || s%8 != 0 || ceilDiv(k, s) != n || last <= 0 || s-last >= 8*n {
				t.Fatalf("kc %d, depth %d: step %d (%d slices, last %d), want %d slices of ≤ %d, multiples of 8, the last within 8·%d", kc, k, s, ceilDiv(k, s), last, n, kc, n)
			}
		}
	}
	defer func() { gemmEvenDepth = true }()
	gemmEvenDepth = false
	if s := (&gemmKernel[float32]{kc: 192}).kcFor(1024); s != 192 {
		t.Errorf("fixed slices: step %d, want 192", s)
	}
}
