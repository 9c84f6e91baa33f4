package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// vecLens are the run lengths the vector tests use: every length up to 70
// (vector loops and tails) and some beyond vecParallelMin (split across
// workers, with uneven pieces).
func vecLens() []int {
	var ns []int
	for n := range 71 {
		ns = append(ns, n)
	}
	return append(ns, 1000, vecParallelMin+vecGrain+13)
}

// vecData returns n seeded float32 values: mostly normal numbers of mixed
// scale, with NaN, ±Inf, ±0 and subnormals sprinkled in.
func vecData(r *rand.Rand, n int) []float32 {
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0,
		float32(math.Copysign(0, -1)), 1e-40, -1e-41, math.MaxFloat32}
	s := make([]float32, n)
	for i := range s {
		if r.IntN(16) == 0 {
			s[i] = specials[r.IntN(len(specials))]
			continue
		}
		s[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(7)-3)))
	}
	return s
}

// same reports whether two results agree: equal bits, or both NaN (the
// payload of a NaN from two NaN operands is not part of the contract).
func same[T Float](a, b T) bool {
	if a != a && b != b {
		return true
	}
	switch x := any(a).(type) {
	case float32:
		return math.Float32bits(x) == math.Float32bits(any(b).(float32))
	default:
		return math.Float64bits(float64(a)) == math.Float64bits(float64(b))
	}
}

// withNT runs f with every run that is not in place taking the
// non-temporal stores, whatever its size.
func withNT(f func()) {
	saved := ntMinBytes
	ntMinBytes = 0
	defer func() { ntMinBytes = saved }()
	f()
}

// withoutAsm runs f with every assembly path turned off, so a test can
// compare the two paths within one binary.
func withoutAsm(f func()) {
	saved := CPU
	CPU = Features{}
	defer func() { CPU = saved }()
	f()
}

// TestVecElementwise checks the contiguous fast paths, reached through the
// exported kernels, element by element against a scalar loop, for float32
// (the assembly path where available) and float64, at every length and at
// start offsets 0..3, with the assembly on and off. The output may alias
// an input exactly; the tests run in place too.
func TestVecElementwise(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 1))
	const off = 3
	type kase struct {
		name string
		run  func(d, a, b []float32)
		ref  func(a, b float32) float32
	}
	lay := func(n int) Layout { return Layout{Shape: []int{n}} }
	cases := []kase{
		{"add", func(d, a, b []float32) { Binary(BAdd, d, lay(len(d)), a, lay(len(d)), b, lay(len(d))) },
			func(a, b float32) float32 { return a + b }},
		{"sub", func(d, a, b []float32) { Binary(BSub, d, lay(len(d)), a, lay(len(d)), b, lay(len(d))) },
			func(a, b float32) float32 { return a - b }},
		{"mul", func(d, a, b []float32) { Binary(BMul, d, lay(len(d)), a, lay(len(d)), b, lay(len(d))) },
			func(a, b float32) float32 { return a * b }},
		{"scale", func(d, a, _ []float32) { Unary(UScale, 0.3, d, lay(len(d)), a, lay(len(d))) },
			func(a, _ float32) float32 { return a * float32(0.3) }},
		{"relu", func(d, a, _ []float32) { Unary(URelu, 0, d, lay(len(d)), a, lay(len(d))) },
			func(a, _ float32) float32 {
				if a > 0 {
					return a
				}
				return 0
			}},
		{"relugrad", func(d, a, b []float32) { UnaryGrad(URelu, 0, d, a, nil, b) },
			func(dy, y float32) float32 {
				if y > 0 {
					return dy
				}
				return 0
			}},
		{"scalegrad", func(d, a, _ []float32) { UnaryGrad(UScale, -2.5, d, a, nil, nil) },
			func(a, _ float32) float32 { return a * -2.5 }},
		{"axpy", func(d, a, _ []float32) { copy(d, a[len(a)-len(d):]); Axpy(0.7, a, lay(len(d)), d, 0) },
			func(a, _ float32) float32 { return 0 }}, // checked separately below
	}
	longest := vecLens()[len(vecLens())-1]
	poolA, poolB := vecData(r, longest+off), vecData(r, longest+off)
	for _, mode := range []string{"asm", "nt", "go"} {
		run := func(f func()) {
			switch mode {
			case "asm":
				f()
			case "nt":
				withNT(f)
			default:
				withoutAsm(f)
			}
		}
		for _, c := range cases {
			for _, n := range vecLens() {
				for o := range off + 1 {
					if n > 1000 && (o > 0 || mode == "go") {
						continue // the long runs test the split, the same in every mode
					}
					a := append([]float32(nil), poolA[:n+o]...)[o:]
					b := append([]float32(nil), poolB[:n+o]...)[o:]
					d := make([]float32, n+o+1)[o:]
					d[n] = 42
					if c.name == "axpy" {
						y0 := poolB[off : off+n]
						copy(d, y0)
						run(func() { Axpy(0.7, a, lay(n), d[:n], 0) })
						for i := range n {
							want := y0[i] + float32(float32(0.7)*a[i])
							if !same(d[i], want) {
								t.Fatalf("%s axpy n=%d off=%d: y[%d] = %g, want %g", mode, n, o, i, d[i], want)
							}
						}
						continue
					}
					run(func() { c.run(d[:n], a, b) })
					for i := range n {
						if want := c.ref(a[i], b[i]); !same(d[i], want) {
							t.Fatalf("%s %s n=%d off=%d: [%d] = %g (%#x), want %g (%#x) from %g, %g",
								mode, c.name, n, o, i, d[i], math.Float32bits(d[i]), want, math.Float32bits(want), a[i], b[i])
						}
					}
					if d[n] != 42 {
						t.Fatalf("%s %s n=%d: wrote past the end", mode, c.name, n)
					}
					// In place: the output is the first input.
					want := make([]float32, n)
					for i := range n {
						want[i] = c.ref(a[i], b[i])
					}
					run(func() { c.run(a, a, b) })
					for i := range n {
						if !same(a[i], want[i]) {
							t.Fatalf("%s %s in place n=%d: [%d] = %g, want %g", mode, c.name, n, i, a[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestVecFloat64 runs the same fast paths on float64 (pure Go) once.
func TestVecFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 2))
	for _, n := range vecLens() {
		a, b, d := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range a {
			a[i], b[i] = r.NormFloat64(), r.NormFloat64()
		}
		l := Layout{Shape: []int{n}}
		Binary(BSub, d, l, a, l, b, l)
		for i := range n {
			if d[i] != a[i]-b[i] {
				t.Fatalf("n=%d: sub[%d] = %g, want %g", n, i, d[i], a[i]-b[i])
			}
		}
		Unary(URelu, 0, d, l, a, l)
		for i := range n {
			if want := max(a[i], 0); d[i] != want {
				t.Fatalf("n=%d: relu[%d] = %g, want %g", n, i, d[i], want)
			}
		}
		copy(d, b)
		Axpy(-1.5, a, l, d, 0)
		for i := range n {
			if want := b[i] + -1.5*a[i]; d[i] != want {
				t.Fatalf("n=%d: axpy[%d] = %g, want %g", n, i, d[i], want)
			}
		}
	}
}

// TestVecFill fills runs of several element types at every length and
// offset, checking the neighbours are untouched.
func TestVecFill(t *testing.T) {
	checkFill(t, float32(-1.25))
	checkFill(t, 3.5)
	checkFill(t, uint16(0xbeef))
	checkFill(t, int8(-3))
	checkFill(t, int32(-7))
	checkFill(t, int64(1<<40+3))
	type pair struct{ a, b int16 } // not a plain number: the Go loop
	checkFill(t, pair{1, 2})
}

func checkFill[T comparable](t *testing.T, v T) {
	t.Helper()
	var zero T
	for _, mode := range []string{"asm", "nt", "go"} {
		for _, n := range append(vecLens(), 4*vecParallelMin+5) {
			for o := range 3 {
				s := make([]T, n+o+1)
				f := func() { Fill(s, Layout{Off: o, Shape: []int{n}}, v) }
				switch mode {
				case "asm":
					f()
				case "nt":
					withNT(f)
				default:
					withoutAsm(f)
				}
				for i, x := range s {
					inside := i >= o && i < o+n
					if inside && x != v || !inside && x != zero {
						t.Fatalf("%s Fill %T n=%d off=%d: s[%d] = %v", mode, v, n, o, i, x)
					}
				}
			}
		}
	}
}

// refSum sums in the order sumRun documents.
func refSum[T Float](s []T) float64 {
	var total float64
	for c := 0; c < len(s); c += sumChunk {
		chunk := s[c:min(c+sumChunk, len(s))]
		var acc [16]float64
		k := len(chunk) &^ 15
		for i := range k {
			acc[i%16] += float64(chunk[i])
		}
		var t float64
		for _, a := range acc {
			t += a
		}
		for _, v := range chunk[k:] {
			t += float64(v)
		}
		total += t
	}
	return total
}

// TestVecSum checks the contiguous sum, with the assembly on and off,
// bit for bit against the documented order, and against a plain float64
// sum within rounding, for float32 and float64 input.
func TestVecSum(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 3))
	for _, n := range append(vecLens(), 5*sumChunk+17) {
		f := make([]float32, n)
		d := make([]float64, n)
		var naive, mag float64
		for i := range f {
			f[i] = float32(r.NormFloat64() * 10)
			d[i] = r.NormFloat64()
			naive += float64(f[i])
			mag += math.Abs(float64(f[i]))
		}
		for _, asm := range []bool{true, false} {
			var g32, g64 float64
			run := func() { g32, g64 = sumRun(f), sumRun(d) }
			if asm {
				run()
			} else {
				withoutAsm(run)
			}
			if w := refSum(f); g32 != w {
				t.Fatalf("asm=%v n=%d: float32 sum = %v, want %v", asm, n, g32, w)
			}
			if w := refSum(d); g64 != w {
				t.Fatalf("asm=%v n=%d: float64 sum = %v, want %v", asm, n, g64, w)
			}
			if math.Abs(g32-naive) > 1e-13*mag {
				t.Fatalf("n=%d: sum %v far from sequential %v", n, g32, naive)
			}
		}
	}
	// Through Reduce: a (3, n) tensor summed over its last axis.
	n := 1000
	src := make([]float32, 3*n)
	for i := range src {
		src[i] = float32(i % 7)
	}
	got := make([]float64, 3)
	Reduce(RSum, 0, []int{3, 1}, src, Layout{Shape: []int{3, n}}, func(i int, v float64) { got[i] = v })
	for i, v := range got {
		if want := refSum(src[i*n : (i+1)*n]); v != want {
			t.Fatalf("Reduce row %d = %v, want %v", i, v, want)
		}
	}
}

// TestBinaryBroadcast checks Binary on broadcast layouts — a (N, C, H, W)
// tensor with a (1, C, 1, 1) one on either side, and the other patterns
// the walk produces — element by element against the plain formula, for
// every arithmetic op, in both float types.
func TestBinaryBroadcast(t *testing.T) {
	testBinaryBroadcast[float32](t)
	testBinaryBroadcast[float64](t)
}

func testBinaryBroadcast[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(11, 4))
	shape := []int{3, 4, 5, 7}
	full := Layout{Shape: shape, Strides: []int{140, 35, 7, 1}}
	channel := Layout{Shape: shape, Strides: []int{0, 1, 0, 0}} // (1, C, 1, 1)
	row := Layout{Shape: shape, Strides: []int{0, 0, 0, 1}}     // (W,)
	column := Layout{Shape: shape, Strides: []int{0, 0, 1, 0}}  // (H, 1)
	scalar := Layout{Shape: shape, Strides: []int{0, 0, 0, 0}}  // ()
	at := func(l Layout, i, j, k, m int) int {
		return i*l.Strides[0] + j*l.Strides[1] + k*l.Strides[2] + m*l.Strides[3]
	}
	ops := map[int]func(x, y T) T{
		BAdd: func(x, y T) T { return x + y }, BSub: func(x, y T) T { return x - y }, BMul: func(x, y T) T { return x * y },
		BDiv: func(x, y T) T { return x / y },
	}
	for _, pair := range [][2]Layout{{full, channel}, {channel, full}, {full, row}, {column, full}, {full, scalar}, {scalar, full}, {channel, row}} {
		a, b := make([]T, 140*3), make([]T, 140*3)
		for i := range a {
			a[i], b[i] = T(r.NormFloat64()), T(r.NormFloat64()+3)
		}
		for op, f := range ops {
			d := make([]T, 140*3)
			Binary(op, d, full, a, pair[0], b, pair[1])
			for i := range shape[0] {
				for j := range shape[1] {
					for k := range shape[2] {
						for m := range shape[3] {
							want := f(a[at(pair[0], i, j, k, m)], b[at(pair[1], i, j, k, m)])
							if got := d[at(full, i, j, k, m)]; got != want {
								t.Fatalf("op %d, strides %v and %v: d[%d,%d,%d,%d] = %v, want %v", op, pair[0].Strides, pair[1].Strides, i, j, k, m, got, want)
							}
						}
					}
				}
			}
		}
	}
}
