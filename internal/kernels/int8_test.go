package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// refGemmI8 is the integer reference: C[i][j] = Σ_k A[i][k]·B[k][j] in
// int64, with B[k][j] read as GemmI8 or PackI8(trans) reads it.
func refGemmI8(m, n, k int, a []int8, lda int, b []int8, ldb int, trans bool) []int64 {
	c := make([]int64, m*n)
	for i := range m {
		for j := range n {
			var s int64
			for p := range k {
				var bv int8
				if trans {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += int64(a[i*lda+p]) * int64(bv)
			}
			c[i*n+j] = s
		}
	}
	return c
}

func randI8(r *rand.Rand, n int, extreme bool) []int8 {
	s := make([]int8, n)
	for i := range s {
		switch {
		case extreme:
			s[i] = []int8{-128, 127, -127}[r.IntN(3)]
		default:
			s[i] = int8(r.Uint32())
		}
	}
	return s
}

// TestGemmI8Exact compares GemmI8 and GemmI8Packed (both B layouts) with the
// int64 reference on random shapes, odd sizes, padded leading dimensions
// and extreme values (-128·-128 everywhere), requiring equality.
func TestGemmI8Exact(t *testing.T) { i8Layouts(t, testGemmI8Exact) }

func testGemmI8Exact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 8))
	type shape struct{ m, n, k int }
	shapes := []shape{{1, 1, 1}, {1, 17, 3}, {6, 16, 2}, {7, 15, 5}, {5, 33, 1}, {13, 16, 514},
		{12, 32, 1023}, {97, 35, 37}, {200, 3, 600}, {2, 100, 9},
		{150, 70, 300}, {6, 700, 600}} // the last two split across workers
	for range 20 {
		shapes = append(shapes, shape{1 + r.IntN(40), 1 + r.IntN(40), 1 + r.IntN(80)})
	}
	for _, s := range shapes {
		for _, extreme := range []bool{false, true} {
			m, n, k := s.m, s.n, s.k
			if extreme && m*n*k > 1<<20 {
				continue // the large shapes are there for the split across workers
			}
			lda, ldb, ldc := k+r.IntN(3), n+r.IntN(3), n+r.IntN(3)
			a := randI8(r, (m-1)*lda+k, extreme)
			b := randI8(r, (k-1)*ldb+n, extreme)
			bt := randI8(r, n*(k+1), extreme) // N×K with ld k+1
			want := refGemmI8(m, n, k, a, lda, b, ldb, false)
			wantT := refGemmI8(m, n, k, a, lda, bt, k+1, true)

			c := make([]int32, (m-1)*ldc+n+2)
			sentinel := int32(-7)
			for i := range c {
				c[i] = sentinel
			}
			GemmI8(m, n, k, a, lda, b, ldb, c, ldc)
			checkI8(t, fmt.Sprintf("GemmI8 %dx%dx%d extreme=%v", m, n, k, extreme), c, ldc, want, m, n, sentinel)

			for i := range c {
				c[i] = sentinel
			}
			GemmI8Packed(m, a, lda, PackI8(k, n, bt, k+1, true), c, ldc)
			checkI8(t, fmt.Sprintf("GemmI8Packed(trans) %dx%dx%d extreme=%v", m, n, k, extreme), c, ldc, wantT, m, n, sentinel)
		}
	}
	t.Logf("path %s, quads %v: %d shapes exact", CPU.Path(), i8UseQuads(), len(shapes))
}

// i8Layouts runs f once per INT8 GEMM layout this build can use: pairs
// (unless AVX512-VNNI makes every packing use quads) and quads (on the
// VNNI kernel, or on its Go twin where the CPU lacks VNNI).
func i8Layouts(t *testing.T, f func(t *testing.T)) {
	for _, quads := range []bool{false, true} {
		if !quads && CPU.AVX512VNNI {
			continue
		}
		name := "pairs"
		if quads {
			name = "quads"
		}
		t.Run(name, func(t *testing.T) {
			saved := i8ForceQuads
			i8ForceQuads = quads
			defer func() { i8ForceQuads = saved }()
			f(t)
		})
	}
}

func checkI8(t *testing.T, what string, c []int32, ldc int, want []int64, m, n int, sentinel int32) {
	t.Helper()
	for i := range m {
		for j := range n {
			if got := int64(c[i*ldc+j]); got != want[i*n+j] {
				t.Fatalf("%s: C[%d][%d] = %d, want %d", what, i, j, got, want[i*n+j])
			}
		}
		if i < m-1 {
			for j := n; j < ldc; j++ {
				if c[i*ldc+j] != sentinel {
					t.Fatalf("%s: wrote C[%d][%d] outside the matrix", what, i, j)
				}
			}
		}
	}
	for _, v := range c[(m-1)*ldc+n:] {
		if v != sentinel {
			t.Fatalf("%s: wrote past the end of C", what)
		}
	}
}

// TestGemmI8LargestK runs K = MaxI8K with every product at its extreme,
// -128·-128, so every sum reaches the documented bound without wrapping.
func TestGemmI8LargestK(t *testing.T) { i8Layouts(t, testGemmI8LargestK) }

func testGemmI8LargestK(t *testing.T) {
	m, n, k := 7, 18, MaxI8K
	a := make([]int8, m*k)
	b := make([]int8, n*k)
	for i := range a {
		a[i] = -128
	}
	for i := range b {
		b[i] = -128
	}
	c := make([]int32, m*n)
	GemmI8Packed(m, a, k, PackI8(k, n, b, k, true), c, n)
	want := int64(k) * 128 * 128
	for i, v := range c {
		if int64(v) != want {
			t.Fatalf("C[%d] = %d, want %d", i, v, want)
		}
	}
	if want > math.MaxInt32 || (int64(k)+1)*128*128 <= math.MaxInt32 {
		t.Fatalf("MaxI8K = %d is not the largest safe K", k)
	}
}

// TestI8KernelMatchesGo checks the assembly micro-kernel (when this build
// has it) against the Go one on random packed panels, storing and
// accumulating, with A rows further apart than they need to be.
func TestI8KernelMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, kp := range []int{1, 2, 3, 8, 255, 256} {
		lda := 2*kp + 6
		a := make([]int16, i8MR*lda)
		b := make([]int16, kp*2*i8NR)
		for i := range a {
			a[i] = int16(int8(r.Uint32()))
		}
		for i := range b {
			b[i] = int16(int8(r.Uint32()))
		}
		for _, acc := range []bool{false, true} {
			const ldc = i8NR + 3
			got := make([]int32, i8MR*ldc)
			want := make([]int32, i8MR*ldc)
			for i := range got {
				got[i] = int32(i)
				want[i] = int32(i)
			}
			i8Kernel(kp, &a[0], lda, &b[0], &got[0], ldc, acc)
			i8KernelGo(kp, &a[0], lda, &b[0], &want[0], ldc, acc)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("kp=%d accumulate=%v: C[%d] = %d, Go kernel %d", kp, acc, i, got[i], want[i])
				}
			}
		}
	}
}

// TestI8QuadsKernelMatchesGo checks the AVX512-VNNI micro-kernel (when
// this CPU has it) against its Go twin on random packed panels, row
// corrections included, storing and accumulating.
func TestI8QuadsKernelMatchesGo(t *testing.T) {
	if !CPU.AVX512VNNI {
		t.Skip("this CPU lacks AVX512-VNNI: the quads layout runs on its Go kernel, tested through GemmI8")
	}
	r := rand.New(rand.NewPCG(4, 5))
	for _, kq := range []int{1, 2, 3, 8, 127, 128} {
		a := make([]byte, kq*4*i8QMR)
		b := make([]byte, kq*4*i8NR)
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		var corr [i8QMR]int32
		for i := range corr {
			corr[i] = int32(r.Uint32())
		}
		for _, rows := range []int{i8QMR, 6} {
			for _, acc := range []bool{false, true} {
				const ldc = i8NR + 3
				got := make([]int32, i8QMR*ldc)
				want := make([]int32, i8QMR*ldc)
				for i := range got {
					got[i] = int32(i)
					want[i] = int32(i)
				}
				if rows == i8QMR {
					i8KernelQuadsVNNI(kq, &a[0], &b[0], &got[0], ldc, &corr[0], acc)
				} else {
					i8KernelQuads6VNNI(kq, &a[0], &b[0], &got[0], ldc, &corr[0], acc)
				}
				i8KernelQuadsGoRows(rows, kq, &a[0], &b[0], &want[0], ldc, &corr[0], acc)
				for i := range got { // rows beyond the kernel's stay as they were
					if got[i] != want[i] {
						t.Fatalf("kq=%d rows=%d accumulate=%v: C[%d] = %d, Go kernel %d", kq, rows, acc, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestI8PackBQuads checks the quads packing of a row-major B, assembly
// panels included, against the layout's definition: panel p, quad q,
// column j, byte t holds B[4q+t][16p+j] + 128, or 128 outside B.
func TestI8PackBQuads(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 1))
	for _, s := range [][2]int{{1, 1}, {4, 16}, {5, 17}, {9, 48}, {16, 33}, {7, 5}, {13, 64}} {
		k, n := s[0], s[1]
		ldb := n + 2
		b := randI8(r, k*ldb, false)
		kq := (k + 3) / 4
		panels := (n + i8NR - 1) / i8NR
		dst := make([]byte, panels*kq*4*i8NR)
		for i := range dst {
			dst[i] = 0x55
		}
		packI8BQuads(dst, k, n, b, ldb, 0, kq)
		for p := range panels {
			for q := range kq {
				for j := range i8NR {
					for tt := range 4 {
						want := byte(0x80)
						if kk, jj := 4*q+tt, p*i8NR+j; kk < k && jj < n {
							want = byte(int(b[kk*ldb+jj]) + 128)
						}
						if got := dst[(p*kq+q)*4*i8NR+4*j+tt]; got != want {
							t.Fatalf("k=%d n=%d: panel %d quad %d column %d byte %d = %#x, want %#x", k, n, p, q, j, tt, got, want)
						}
					}
				}
			}
		}
	}
}

// TestDequantI32 checks the epilogue against its formula for per-row and
// per-tensor row scales, per-column and per-tensor column scales, with
// and without bias.
func TestDequantI32(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	m, n := 9, 21
	acc := make([]int32, m*n)
	for i := range acc {
		acc[i] = int32(r.Uint32())
	}
	rowsS := []float32{0.5}
	for range m - 1 {
		rowsS = append(rowsS, float32(r.Float64()))
	}
	colsS := make([]float32, n)
	bias := make([]float32, n)
	for j := range colsS {
		colsS[j] = float32(r.Float64() * 1e-3)
		bias[j] = float32(r.NormFloat64())
	}
	for _, sa := range [][]float32{rowsS, rowsS[:1]} {
		for _, sb := range [][]float32{colsS, colsS[:1]} {
			for _, bs := range [][]float32{nil, bias} {
				ldd := n + 2
				dst := make([]float32, m*ldd)
				DequantI32(m, n, dst, ldd, acc, n, sa, sb, bs)
				for i := range m {
					for j := range n {
						a, b := sa[0], sb[0]
						if len(sa) == m {
							a = sa[i]
						}
						if len(sb) == n {
							b = sb[j]
						}
						want := float32(acc[i*n+j]) * float32(a*b)
						if bs != nil {
							want = float32(want) + bs[j]
						}
						if dst[i*ldd+j] != want {
							t.Fatalf("scales %d/%d bias %v: dst[%d][%d] = %g, want %g",
								len(sa), len(sb), bs != nil, i, j, dst[i*ldd+j], want)
						}
					}
				}
			}
		}
	}
}

// TestGemmI8BadArgsPanic checks the documented limits.
func TestGemmI8BadArgsPanic(t *testing.T) {
	for name, f := range map[string]func(){
		"k=0":       func() { GemmI8(1, 1, 0, []int8{1}, 1, []int8{1}, 1, []int32{0}, 1) },
		"k>MaxI8K":  func() { PackI8(MaxI8K+1, 1, nil, 1, false) },
		"short lda": func() { GemmI8(2, 2, 3, make([]int8, 6), 2, make([]int8, 6), 2, make([]int32, 4), 2) },
		"short a":   func() { GemmI8(2, 2, 3, make([]int8, 5), 3, make([]int8, 6), 2, make([]int32, 4), 2) },
		"bad scales": func() {
			DequantI32(2, 2, make([]float32, 4), 2, make([]int32, 4), 2, make([]float32, 3), []float32{1}, nil)
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
