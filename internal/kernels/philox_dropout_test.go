package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// dropoutTwin is Dropout as it was before the chunked kernel: one
// PhiloxStream word per element, one goroutine. It is the reference the
// tests compare Dropout with bit for bit.
func dropoutTwin[T Float](dst []T, dl Layout, src []T, sl Layout, p float64, seed, offset uint64) {
	s := NewPhiloxStream(seed)
	scale := 1 / (1 - p)
	pos := offset
	walk(dl.Shape, []Layout{dl, sl}, func(off []int, n int, inc []int) {
		d, x := off[0], off[1]
		for range n {
			v := T(0)
			if float64(s.Uniform(pos)) >= p {
				v = T(float64(src[x]) * scale)
			}
			dst[d] = v
			pos++
			d += inc[0]
			x += inc[1]
		}
	})
}

// dropPaths are the PhiloxRange paths of this CPU: its widest, AVX2, Go.
func dropPaths() []Features {
	return []Features{CPU, {AVX2FMA: CPU.AVX2FMA}, {}}
}

// dropProbs are the probabilities the tests draw with, with the edges
// Dropout must treat as the twin does (p ≤ 0 keeps all, p ≥ 1 and NaN
// none) and a p just above a multiple of 2⁻²⁴.
var dropProbs = []float64{0, 0.1, 0.5, 0.999, -0.25, 1, math.NaN(), 3*0x1p-24 + 0x1p-60, 0x1p-24}

// TestDropoutMatchesTwin compares Dropout with dropoutTwin bit for bit on
// contiguous slices: offsets 0–9 and near 2⁶⁴, lengths 0–70 and a few
// long ones (split across the workers), every probability in dropProbs,
// float32 and float64, every PhiloxRange path.
func TestDropoutMatchesTwin(t *testing.T) {
	saved := CPU
	defer func() { CPU = saved }()
	lengths := []int{}
	for n := range 71 {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, dropChunk-3, dropChunk+5, dropParallelMin+7, 3*dropGrain+dropChunk+1, 100_003)
	offsets := []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1<<32 - 2, 1<<62 + 3, ^uint64(0) - 5}
	if raceEnabled { // the plain run sweeps them all; under the race detector a few phases and the wrap
		offsets = []uint64{0, 3, 1<<32 - 2, ^uint64(0) - 5}
	}
	for _, path := range dropPaths() {
		CPU = path
		for _, p := range dropProbs {
			for _, off := range offsets {
				for _, n := range lengths {
					if n > 1000 && off > 9 && off != ^uint64(0)-5 {
						continue // keep the long cases few
					}
					name := fmt.Sprintf("path %q p %g offset %d n %d", path.Path(), p, off, n)
					checkDense[float32](t, name, n, p, 11, off)
					checkDense[float64](t, name, n, p, 12, off)
				}
			}
		}
	}
}

// TestDropoutAtThreshold draws with probabilities on and next to the
// draws themselves, where a threshold off by one or a > for ≥ would
// change the mask: for words w of the stream, among them words whose low
// byte is 0 (w is then exactly the threshold of p = Uniform24(w)), p is
// Uniform24(w) and Uniform24(w) ± 2⁻⁴⁰, over 64 elements around w's
// position on every path.
func TestDropoutAtThreshold(t *testing.T) {
	saved := CPU
	defer func() { CPU = saved }()
	const seed = 21
	s := NewPhiloxStream(seed)
	var at []uint64 // positions of the words tried
	for q := uint64(32); len(at) < 12; q++ {
		if s.Word(q)&0xff == 0 || q%97 == 0 {
			at = append(at, q)
		}
	}
	for _, path := range dropPaths() {
		CPU = path
		for _, q := range at {
			u := float64(s.Uniform(q))
			for _, p := range []float64{u, u + 0x1p-40, u - 0x1p-40} {
				for _, back := range []uint64{0, 5, 20, 31} {
					name := fmt.Sprintf("path %q p %g (word %#x at %d) offset %d", path.Path(), p, s.Word(q), q, q-back)
					checkDense[float32](t, name, 64, p, seed, q-back)
					checkDense[float64](t, name, 64, p, seed, q-back)
				}
			}
		}
	}
}

// checkDense compares Dropout and its twin on n contiguous elements at a
// leading offset of 3, with a guard element after them.
func checkDense[T Float](t *testing.T, name string, n int, p float64, seed, off uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	src := make([]T, n+5)
	for i := range src {
		src[i] = T(rng.NormFloat64())
	}
	src[4] = T(math.NaN()) // a dropped NaN is +0, a kept one NaN
	got := make([]T, n+4)
	want := make([]T, n+4)
	got[n+3], want[n+3] = 7, 7
	dl, sl := Layout{Off: 3, Shape: []int{n}}, Layout{Off: 2, Shape: []int{n}}
	Dropout(got, dl, src, sl, p, seed, off)
	dropoutTwin(want, dl, src, sl, p, seed, off)
	sameDropBits(t, name, got, want)
}

// sameDropBits fails unless got and want hold the same bits.
func sameDropBits[T Float](t *testing.T, name string, got, want []T) {
	t.Helper()
	for i := range want {
		if dropBitsOf(got[i]) != dropBitsOf(want[i]) {
			t.Fatalf("%s %T: element %d = %g, want %g", name, got[i], i, got[i], want[i])
		}
	}
}

// dropBitsOf returns the IEEE bits of x.
func dropBitsOf[T Float](x T) uint64 {
	if f, ok := any(x).(float32); ok {
		return uint64(math.Float32bits(f))
	}
	return math.Float64bits(float64(x))
}

// TestDropoutLayoutsMatchTwin compares Dropout with dropoutTwin on strided
// layouts: a transposed source, a broadcast (stride 0) source, a
// transposed destination, a column slice with a long contiguous inner
// run, size-1 dimensions with odd strides, at several offsets.
func TestDropoutLayoutsMatchTwin(t *testing.T) {
	saved := CPU
	defer func() { CPU = saved }()
	type layouts struct {
		name   string
		dl, sl Layout
	}
	cases := []layouts{
		{"transposed src", Layout{Shape: []int{37, 29}}, Layout{Off: 1, Shape: []int{37, 29}, Strides: []int{1, 37}}},
		{"broadcast src", Layout{Shape: []int{9, 300}}, Layout{Off: 2, Shape: []int{9, 300}, Strides: []int{0, 1}}},
		{"broadcast rows", Layout{Shape: []int{40, 33}}, Layout{Shape: []int{40, 33}, Strides: []int{1, 0}}},
		{"transposed dst", Layout{Off: 3, Shape: []int{23, 31}, Strides: []int{1, 23}}, Layout{Shape: []int{23, 31}}},
		{"column slice", Layout{Shape: []int{3, 20000}}, Layout{Off: 5, Shape: []int{3, 20000}, Strides: []int{20011, 1}}},
		{"size-1 dims", Layout{Shape: []int{1, 50, 1}, Strides: []int{999, 1, 77}}, Layout{Shape: []int{1, 50, 1}, Strides: []int{5, 1, 3}}},
		{"scalar", Layout{Shape: []int{}}, Layout{Off: 4, Shape: []int{}}},
		{"empty", Layout{Shape: []int{4, 0}}, Layout{Shape: []int{4, 0}}},
	}
	for _, path := range dropPaths() {
		CPU = path
		for _, c := range cases {
			for _, p := range []float64{0, 0.1, 0.5, 0.999} {
				for _, off := range []uint64{0, 3, 6, ^uint64(0) - 100} {
					name := fmt.Sprintf("path %q %s p %g offset %d", path.Path(), c.name, p, off)
					checkLayout[float32](t, name, c.dl, c.sl, p, off)
					checkLayout[float64](t, name, c.dl, c.sl, p, off)
				}
			}
		}
	}
}

// checkLayout compares Dropout and its twin for layouts dl and sl.
func checkLayout[T Float](t *testing.T, name string, dl, sl Layout, p float64, off uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, off))
	src := make([]T, dropReach(sl))
	for i := range src {
		src[i] = T(rng.NormFloat64())
	}
	got := make([]T, dropReach(dl))
	want := make([]T, len(got))
	for i := range got {
		got[i], want[i] = -1, -1 // elements outside dl stay
	}
	Dropout(got, dl, src, sl, p, 5, off)
	dropoutTwin(want, dl, src, sl, p, 5, off)
	sameDropBits(t, name, got, want)
}

// dropReach returns one past the largest element index l can address.
func dropReach(l Layout) int {
	st := stridesOf(l)
	hi := l.Off
	for i, n := range l.Shape {
		if n == 0 {
			return l.Off
		}
		hi += (n - 1) * st[i]
	}
	return hi + 1
}

// TestDropoutNoAllocs checks that a contiguous Dropout call on one
// goroutine draws its words into the stack, not the heap.
func TestDropoutNoAllocs(t *testing.T) {
	src := make([]float32, dropParallelMin-1)
	dst := make([]float32, len(src))
	l := Layout{Shape: []int{len(src)}}
	if a := testing.AllocsPerRun(20, func() { Dropout(dst, l, src, l, 0.1, 3, 5) }); a != 0 {
		t.Errorf("Dropout of %d contiguous elements allocates %g times a call, want 0", len(src), a)
	}
}

// BenchmarkDropout times Dropout ("new") and its twin ("old") on 2¹⁸
// contiguous float32 elements (one GPT block's activation of batch 32,
// context 64, width 128) at p = 0.1, in elements per second.
func BenchmarkDropout(b *testing.B) {
	const n = 1 << 18
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(i % 13)
	}
	dst := make([]float32, n)
	l := Layout{Shape: []int{n}}
	for _, v := range []string{"old", "new", "new-1worker"} {
		b.Run(v, func(b *testing.B) {
			for b.Loop() {
				switch v {
				case "old":
					dropoutTwin(dst, l, src, l, 0.1, 1, 3)
				case "new":
					Dropout(dst, l, src, l, 0.1, 1, 3)
				default:
					dropoutDense(dst, src, 3, newDropMask(0.1, 1))
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "elems/s")
		})
	}
}
