package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestUnaryFastPaths checks float32 Unary for the ops with a fast path:
// contiguous runs short and long (the long ones are split across the
// workers) and a strided view (which takes the scalar twin) must give the
// scalar fast function's bits element by element, and float64 must still
// give package math's value exactly. GeluErf (no fast path; long runs are
// split) must give the float64 function's rounded value.
func TestUnaryFastPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, op := range []int{UExp, UTanh, USigmoid, UGeluTanh, UGeluErf} {
		for _, n := range []int{1, 7, 8, 23, 1000, 3*fastParallelMin + 5} {
			x64 := make([]float64, n)
			for i := range x64 {
				x64[i] = 4 * rng.NormFloat64()
			}
			x := attnTo32(x64)
			l := Layout{Shape: []int{n}}
			name := fmt.Sprintf("op %d, n %d", op, n)

			got := make([]float32, n)
			Unary(op, 0, got, l, x, l)
			for i, v := range x {
				var want float32
				if fastUnaryOp(op) {
					want = fastScalar(op)(v)
				} else {
					want = float32(UnaryFunc(op, 0)(float64(v)))
				}
				if math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("%s: element %d: f(%g) = %g, want %g", name, i, v, got[i], want)
				}
			}

			g64 := make([]float64, n)
			Unary(op, 0, g64, l, x64, l)
			f := UnaryFunc(op, 0)
			for i, v := range x64 {
				if want := f(v); g64[i] != want {
					t.Fatalf("%s: float64 element %d: f(%g) = %g, want %g", name, i, v, g64[i], want)
				}
			}
		}
		// A transposed (rows, cols) view: strided runs.
		rows, cols := 9, 13
		src := make([]float32, rows*cols)
		for i := range src {
			src[i] = float32(3 * rng.NormFloat64())
		}
		dst := make([]float32, rows*cols)
		dl := Layout{Shape: []int{cols, rows}}
		sl := Layout{Shape: []int{cols, rows}, Strides: []int{1, cols}}
		Unary(op, 0, dst, dl, src, sl)
		for c := range cols {
			for r := range rows {
				v := src[r*cols+c]
				var want float32
				if fastUnaryOp(op) {
					want = fastScalar(op)(v)
				} else {
					want = float32(UnaryFunc(op, 0)(float64(v)))
				}
				if got := dst[c*rows+r]; math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("op %d strided (%d, %d): f(%g) = %g, want %g", op, c, r, v, got, want)
				}
			}
		}
	}
}

// TestUnaryGradFastPaths checks float32 UnaryGrad of exp, tanh, sigmoid and
// the tanh GELU against the float64 derivative, short and long (split)
// runs: within 4 ulp of the float64 result plus 2⁻²³·|dy| (the GELU
// derivative's absolute allowance near its zero, fastmath_test.go), and
// float64 gradients still equal UnaryDeriv's exactly.
func TestUnaryGradFastPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	for _, op := range []int{UExp, UTanh, USigmoid, UGeluTanh} {
		for _, n := range []int{5, 8, 100, 3*vecParallelMin + 3} {
			x64, dy64 := make([]float64, n), make([]float64, n)
			for i := range x64 {
				x64[i] = 3 * rng.NormFloat64()
				dy64[i] = rng.NormFloat64()
			}
			x, dy := attnTo32(x64), attnTo32(dy64)
			l := Layout{Shape: []int{n}}
			y := make([]float32, n)
			Unary(op, 0, y, l, x, l)
			dx := make([]float32, n)
			UnaryGrad(op, 0, dx, dy, x, y)
			deriv := UnaryDeriv(op, 0)
			for i := range dx {
				want := float64(dy[i]) * deriv(float64(x[i]), float64(y[i]))
				if op == UGeluTanh {
					want = float64(dy[i]) * geluDerivRef(float64(x[i]))
				}
				tol := 4*ulp32(want) + 0x1p-23*math.Abs(float64(dy[i]))
				if math.Abs(float64(dx[i])-want) > tol {
					t.Fatalf("op %d, n %d: dx[%d] = %g, want %g (x %g, y %g, dy %g)", op, n, i, dx[i], want, x[i], y[i], dy[i])
				}
			}

			y64 := make([]float64, n)
			Unary(op, 0, y64, l, x64, l)
			dx64 := make([]float64, n)
			UnaryGrad(op, 0, dx64, dy64, x64, y64)
			for i := range dx64 {
				if want := dy64[i] * deriv(x64[i], y64[i]); dx64[i] != want {
					t.Fatalf("op %d, n %d: float64 dx[%d] = %g, want %g", op, n, i, dx64[i], want)
				}
			}
		}
	}
}

// TestCopyParallel checks Copy of copies large enough to split across the
// workers — a (B, T, 3, H, D) → (3, B, H, T, D) permutation of attention
// heads in 16 bits, a contiguous run, and a source with a broadcast
// (stride 0) dimension — element by element against the index formula,
// and that an overlapping copy (not split) matches the walk on one
// goroutine.
func TestCopyParallel(t *testing.T) {
	const b, tt, h, d = 4, 64, 4, 64 // 3·b·tt·h·d 16-bit values: 1.5 MiB
	src := make([]uint16, 3*b*tt*h*d)
	for i := range src {
		src[i] = uint16(i*7 + i>>16)
	}
	// dst[q][bi][hi][ti][di] = src[bi][ti][q][hi][di].
	dl := Layout{Shape: []int{3, b, h, tt, d}}
	sl := Layout{Shape: []int{3, b, h, tt, d}, Strides: []int{h * d, tt * 3 * h * d, d, 3 * h * d, 1}}
	dst := make([]uint16, len(src))
	Copy(dst, dl, src, sl)
	for q := range 3 {
		for bi := range b {
			for hi := range h {
				for ti := range tt {
					for di := range d {
						got := dst[(((q*b+bi)*h+hi)*tt+ti)*d+di]
						want := src[(((bi*tt+ti)*3+q)*h+hi)*d+di]
						if got != want {
							t.Fatalf("permuted copy [%d %d %d %d %d] = %d, want %d", q, bi, hi, ti, di, got, want)
						}
					}
				}
			}
		}
	}
	flat := make([]float32, 1<<19)
	for i := range flat {
		flat[i] = float32(i)
	}
	out := make([]float32, len(flat)+5)
	Copy(out, Layout{Off: 5, Shape: []int{len(flat)}}, flat, Layout{Shape: []int{len(flat)}})
	row := flat[:512]
	bcast := make([]float32, 1024*512)
	Copy(bcast, Layout{Shape: []int{1024, 512}}, row, Layout{Shape: []int{1024, 512}, Strides: []int{0, 1}})
	for i := range flat {
		if out[5+i] != flat[i] || bcast[i] != row[i%512] {
			t.Fatalf("element %d: contiguous %v, broadcast %v; want %v and %v", i, out[5+i], bcast[i], flat[i], row[i%512])
		}
	}
	// An overlapping copy shifts the buffer one row down, as the walk does.
	buf, ref := make([]float32, 1025*512), make([]float32, 1025*512)
	for i := range buf {
		buf[i], ref[i] = float32(i), float32(i)
	}
	shift := func(s []float32, f func([]float32, Layout, []float32, Layout)) {
		f(s, Layout{Off: 512, Shape: []int{1024, 512}}, s, Layout{Shape: []int{1024, 512}})
	}
	shift(buf, Copy[float32])
	shift(ref, copyWalk[float32])
	for i := range buf {
		if buf[i] != ref[i] {
			t.Fatalf("overlapping copy [%d] = %v, want %v as on one goroutine", i, buf[i], ref[i])
		}
	}
}
