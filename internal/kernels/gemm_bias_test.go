package kernels

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// biasBefore is the unfused bias: C_i = beta·C_i + bias, matrix by matrix,
// then run(g1) on that matrix alone with beta 1 (what autograd.Linear did
// before the bias moved into the GEMM's store).
func biasBefore[T Float](g GemmArgs, bias, c []T, run func(g1 GemmArgs, c []T)) {
	for bi := range max(g.Batch, 1) {
		oc := g.OffC + bi*g.StrideC
		for i := range g.M {
			row := c[oc+i*g.LdC : oc+i*g.LdC+g.N]
			for j := range row {
				if g.Beta == 0 {
					row[j] = bias[j]
				} else {
					row[j] = T(g.Beta)*row[j] + bias[j]
				}
			}
		}
		g1 := g
		g1.Batch, g1.Beta = 1, 1
		g1.OffA, g1.OffB, g1.OffC = g.OffA+bi*g.StrideA, g.OffB+bi*g.StrideB, oc
		run(g1, c)
	}
}

// gemmBiasCase runs tc through fused(bias, c) and checks it bit for bit
// against biasBefore over unfused, and within tolerance against the
// float64 reference of alpha·op(A)·op(B) + (beta·C + bias).
func gemmBiasCase[T Float](t *testing.T, r *rand.Rand, tc gemmCase, a, b []float64, eps float64,
	fused func(g GemmArgs, bias, c []T), unfused func(g GemmArgs, c []T)) {
	t.Helper()
	g, _, _, lc := tc.args()
	c := gemmToF64(gemmToT[T](gemmRand(r, lc)))
	if tc.nanC {
		for i := range c {
			c[i] = math.NaN()
		}
	}
	bias := gemmToF64(gemmToT[T](gemmRand(r, max(tc.n, 1))))
	got := gemmToT[T](c)
	fused(g, gemmToT[T](bias), got)
	old := gemmToT[T](c)
	biasBefore(g, gemmToT[T](bias), old, unfused)
	for i := range got {
		if x, y := float64(got[i]), float64(old[i]); x != y && !(math.IsNaN(x) && math.IsNaN(y)) {
			t.Fatalf("%v: fused bias c[%d] = %g, bias added before the GEMM %g", tc, i, x, y)
		}
	}
	want := append([]float64(nil), c...)
	mag := make([]float64, len(c))
	biasBefore(g, bias, want, func(g1 GemmArgs, w []float64) {
		out, m := gemmRef(g1, a, b, w)
		copy(w, out)
		in := gemmInC(g1, len(w))
		for i := range m {
			if in[i] {
				mag[i] = m[i]
			}
		}
	})
	gemmCheck(t, tc.String()+" bias", g, got, c, want, mag, eps)
}

// TestGemmBias checks GemmBias on every case of the shared table, float32
// and float64.
func TestGemmBias(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, tc := range gemmCases(1) {
		gemmBiasTyped[float32](t, r, tc, gemmEps32)
		gemmBiasTyped[float64](t, r, tc, gemmEps64)
	}
}

func gemmBiasTyped[T Float](t *testing.T, r *rand.Rand, tc gemmCase, eps float64) {
	t.Helper()
	_, la, lb, _ := tc.args()
	a, b := gemmToF64(gemmToT[T](gemmRand(r, la))), gemmToF64(gemmToT[T](gemmRand(r, lb)))
	at, bt := gemmToT[T](a), gemmToT[T](b)
	gemmBiasCase(t, r, tc, a, b, eps,
		func(g GemmArgs, bias, c []T) { GemmBias(g, at, bt, bias, c) },
		func(g GemmArgs, c []T) { Gemm(g, at, bt, c) })
}

// TestGemmBiasKernels runs the bias through the driver on every float32
// micro-kernel of this build with tiny blocks (many kc panels and edge
// tiles), and the 16-bit GemmHalfBias on both formats.
func TestGemmBiasKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	asm, _ := sgemmAsmKernels()
	cases := []gemmCase{
		{m: 40, n: 70, k: 45, alpha: 1.25, beta: 0, batch: 1, pad: [3]int{1, 2, 3}, nanC: true},
		{ta: true, m: 31, n: 50, k: 19, alpha: -1, beta: 1, batch: 2, pad: [3]int{0, 1, 0}},
		{ta: true, tb: true, m: 26, n: 17, k: 9, alpha: 0.5, beta: 0.5, batch: 3, bcast: [3]bool{false, false, true}},
		{m: 20, n: 40, k: 30, alpha: 1, beta: 0, batch: 5, pad: [3]int{2, 1, 0}},
	}
	for _, kn := range append([]gemmKernel[float32]{sgemmGoKernel, go12x32}, asm...) {
		kn.mc, kn.kc, kn.nc = 12, 8, 32
		for _, tc := range cases {
			_, la, lb, _ := tc.args()
			a, b := gemmToF64(gemmToT[float32](gemmRand(r, la))), gemmToF64(gemmToT[float32](gemmRand(r, lb)))
			av, bv := operand[float32]{f: gemmToT[float32](a)}, operand[float32]{f: gemmToT[float32](b)}
			var jobs freeList[gemmJob[float32]]
			gemmBiasCase(t, r, tc, a, b, gemmEps32,
				func(g GemmArgs, bias, c []float32) { gemmBlockedBias(&kn, &jobs, g, nil, av, bv, bias, c) },
				func(g GemmArgs, c []float32) { gemmBlocked(&kn, &jobs, g, av, bv, c) })
		}
	}
	for i, tc := range append(cases, gemmCase{m: 64, n: 96, k: 300, alpha: 1, beta: 0, batch: 1}) {
		for _, bf := range []bool{true, false} {
			_, la, lb, _ := tc.args()
			ah, bh := gemmHalfBits(r, la, bf), gemmHalfBits(r, lb, bf || i%2 == 0)
			a, b := make([]float32, la), make([]float32, lb)
			halfToF32(a, ah, bf)
			halfToF32(b, bh, bf || i%2 == 0)
			gemmBiasCase(t, r, tc, gemmToF64(a), gemmToF64(b), gemmEps32,
				func(g GemmArgs, bias, c []float32) { GemmHalfBias(g, ah, bh, bf, bf || i%2 == 0, bias, c) },
				func(g GemmArgs, c []float32) { GemmHalf(g, ah, bh, bf, bf || i%2 == 0, c) })
		}
	}
}

// TestGemmBiasShort checks that a bias shorter than N panics, naming it.
func TestGemmBiasShort(t *testing.T) {
	g := GemmArgs{M: 2, N: 3, K: 4, Alpha: 1, LdA: 4, LdB: 3, LdC: 3}
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "bias has 2 elements for 3 columns") {
			t.Errorf("short bias: panic %q", msg)
		}
	}()
	GemmBias(g, make([]float32, 8), make([]float32, 12), make([]float32, 2), make([]float32, 6))
}
