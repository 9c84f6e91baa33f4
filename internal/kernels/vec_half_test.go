package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// halfCase is a 16-bit format as the tests see it: its scalar conversions
// from package dtype, the independent reference.
type halfCase struct {
	name   string
	bf     bool
	widen  func(uint16) float32
	narrow func(float32) uint16
}

var halfCases = []halfCase{
	{"bf16", true, dtype.BF16ToF32, dtype.BF16FromF32},
	{"f16", false, dtype.F16ToF32, dtype.F16FromF32},
}

// halfPatternsAll returns every 16-bit pattern, then n more at random, so
// that the assembly's tail and body both see every class of value.
func halfPatternsAll(r *rand.Rand, n int) []uint16 {
	v := make([]uint16, 1<<16+n)
	for i := range 1 << 16 {
		v[i] = uint16(i)
	}
	for i := 1 << 16; i < len(v); i++ {
		v[i] = uint16(r.Uint32())
	}
	return v
}

// refTiled widens ins with c, runs the float32 kernel f and narrows the
// result: the tile path's arithmetic, element by element.
func refTiled(c halfCase, n int, f func(d []float32, in [][]float32), ins ...[]uint16) []uint16 {
	w := make([][]float32, len(ins))
	for j, in := range ins {
		w[j] = make([]float32, n)
		for i := range n {
			w[j][i] = c.widen(in[i])
		}
	}
	d := make([]float32, n)
	f(d, w)
	out := make([]uint16, n)
	for i, v := range d {
		out[i] = c.narrow(v)
	}
	return out
}

// forEachPath runs f with the assembly (when the CPU has it), with the
// AVX2 assembly alone when the CPU has AVX-512 too, and with the Go
// loops.
func forEachPath(t *testing.T, f func(t *testing.T)) {
	t.Run(CPU.Path(), f)
	saved := CPU
	defer func() { CPU = saved }()
	if CPU.AVX512 {
		CPU.AVX512, CPU.AVX512BF16, CPU.AVX512VNNI = false, false, false
		t.Run(CPU.Path(), f)
	}
	if CPU.AVX2FMA {
		CPU = Features{}
		t.Run("go", f)
	}
}

func firstDiff16(a, b []uint16) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// TestHalfElementwiseMatchTiles: the 16-bit ReLU, ReLU gradient and
// bfloat16 add, sub, mul and axpy equal widen → float32 kernel → narrow bit for
// bit, over every 16-bit pattern (and a shifted copy as the other input).
func TestHalfElementwiseMatchTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a := halfPatternsAll(r, 1<<17+13) // over vecParallelMin: split across workers
	b := append(a[7919:], a[:7919]...)
	n := len(a)
	forEachPath(t, func(t *testing.T) {
		for _, c := range halfCases {
			got := make([]uint16, n)
			ReluHalf(got, a, c.bf)
			want := refTiled(c, n, func(d []float32, in [][]float32) { reluGo(d, in[0]) }, a)
			if i := firstDiff16(got, want); i >= 0 {
				t.Errorf("%s ReLU(%#04x) = %#04x, want %#04x", c.name, a[i], got[i], want[i])
			}
			ReluGradHalf(got, a, b, c.bf)
			want = refTiled(c, n, func(d []float32, in [][]float32) { reluGradGo(d, in[0], in[1]) }, a, b)
			if i := firstDiff16(got, want); i >= 0 {
				t.Errorf("%s ReLUGrad(dy %#04x, y %#04x) = %#04x, want %#04x", c.name, a[i], b[i], got[i], want[i])
			}
		}
		c := halfCases[0]
		for _, op := range []int{BAdd, BSub, BMul} {
			got := make([]uint16, n)
			if !BinaryBF16(op, got, a, b) {
				t.Fatalf("BinaryBF16(op %d) refused", op)
			}
			want := refTiled(c, n, func(d []float32, in [][]float32) { binaryGo(op, d, in[0], in[1]) }, a, b)
			if i := firstDiff16(got, want); i >= 0 {
				t.Errorf("bf16 op %d (%#04x, %#04x) = %#04x, want %#04x", op, a[i], b[i], got[i], want[i])
			}
		}
		got := slices.Clone(b)
		AxpyBF16(-0.7, a, got)
		want := refTiled(c, n, func(d []float32, in [][]float32) {
			copy(d, in[1])
			axpyRun(float32(-0.7), in[0], d)
		}, a, b)
		if i := firstDiff16(got, want); i >= 0 {
			t.Errorf("bf16 axpy (%#04x, %#04x) = %#04x, want %#04x", a[i], b[i], got[i], want[i])
		}
		if BinaryBF16(BDiv, make([]uint16, 1), a[:1], b[:1]) {
			t.Errorf("BinaryBF16(BDiv) accepted an op it does not implement")
		}
	})
}

// TestAccBF16MatchesWidenAdd: accBF16 gives the bits of widening to
// float32 and adding in float64 (acc first), over every bfloat16 pattern
// added into finite, infinite and NaN sums, on every path.
func TestAccBF16MatchesWidenAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	h := halfPatternsAll(r, 1000+5)
	start := make([]float64, len(h))
	specials := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
		math.Float64frombits(0x7ff0_0000_0000_0123), math.Float64frombits(0xfff8_0000_0000_4567)}
	for i := range start {
		start[i] = r.NormFloat64() * 1e3
		if i%13 == 0 {
			start[i] = specials[i/13%len(specials)]
		}
	}
	forEachPath(t, func(t *testing.T) {
		got := slices.Clone(start)
		accBF16(got, h)
		// ReduceColumnsHalf's loop before accBF16, as it was written.
		want := slices.Clone(start)
		w := make([]float32, len(h))
		bf16ToF32(w, h)
		for j, v := range w {
			want[j] += float64(v)
		}
		for i, v := range h {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%x + bf16 %#04x = %x, want %x", math.Float64bits(start[i]), v,
					math.Float64bits(got[i]), math.Float64bits(want[i]))
			}
		}
	})
}
