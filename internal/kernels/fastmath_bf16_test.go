package kernels

import (
	"math/rand/v2"
	"testing"
)

// TestGeluTanhBF16: the in-register bfloat16 GELU and its gradient give,
// for every one of the 65,536 bfloat16 patterns as x (NaN, Inf, denormals
// included; dy random patterns) and on every path of this machine (AVX-512
// and AVX2 machines take the AVX2 lanes, "go" the scalar loop), the bytes
// of widening, UnaryFlat's and UnaryGrad's float32 GELU and narrowing with
// F32ToBF16; also over runs of 1 to 23 elements from odd offsets (tails
// under 8) and a run long enough to be split across the workers.
func TestGeluTanhBF16(t *testing.T) {
	saved, paths := CPU, optimPaths()
	defer func() { CPU = saved }()
	r := rand.New(rand.NewPCG(2, 7))
	all := make([]uint16, 1<<16)
	dy := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
		dy[i] = uint16(r.Uint32())
	}
	long := make([]uint16, 3*fastParallelMin+5)
	dyLong := make([]uint16, len(long))
	for i := range long {
		long[i] = halfOf(true, float32(r.NormFloat64()*4))
		dyLong[i] = halfOf(true, float32(r.NormFloat64()))
	}
	type run struct{ x, dy []uint16 }
	runs := []run{{all, dy}, {long, dyLong}}
	for n := 1; n <= 23; n++ {
		runs = append(runs, run{all[1000+n : 1000+2*n], dy[3+n : 3+2*n]})
	}
	for _, p := range paths {
		CPU = p.f
		for _, c := range runs {
			n := len(c.x)
			want, wantG := geluBF16Ref(c.x, c.dy)
			got, gotG := make([]uint16, n), make([]uint16, n)
			GeluTanhBF16(got, c.x)
			GeluTanhGradBF16(gotG, c.dy, c.x)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s n=%d: gelu(%#04x) = %#04x, want %#04x", p.name, n, c.x[i], got[i], want[i])
				}
				if gotG[i] != wantG[i] {
					t.Fatalf("%s n=%d: gelu grad(dy %#04x, x %#04x) = %#04x, want %#04x", p.name, n, c.dy[i], c.x[i], gotG[i], wantG[i])
				}
			}
		}
	}
	CPU = saved
}

// geluBF16Ref is the tile path: x and dy widened, the float32 kernels,
// the results narrowed.
func geluBF16Ref(x, dy []uint16) (y, dx []uint16) {
	n := len(x)
	xf, dyf, yf, dxf := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	BF16ToF32(xf, x)
	BF16ToF32(dyf, dy)
	UnaryFlat(UGeluTanh, 0, yf, xf)
	UnaryGrad(UGeluTanh, 0, dxf, dyf, xf, nil)
	y, dx = make([]uint16, n), make([]uint16, n)
	F32ToBF16(y, yf)
	F32ToBF16(dx, dxf)
	return y, dx
}
