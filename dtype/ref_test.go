package dtype

import (
	"math"
	"sort"
	"strings"
	"testing"
)

// This file holds reference implementations written from the format
// definitions with float64 arithmetic. They share no code with the package
// so that the tests comparing against them can actually fail.

// refFormat describes a small binary float format (at most 16 bits) and
// holds every non-negative finite value in ascending order, plus one extra
// entry: 2^(bias+1) with the +Inf bit pattern. That entry is where the
// next value would be if the exponent were unbounded, so a value rounds to
// Inf exactly when nearest-search picks it.
type refFormat struct {
	name     string
	expBits  int
	fracBits int
	values   []float64
	patterns []uint16
}

func newRefFormat(name string, expBits, fracBits int) *refFormat {
	f := &refFormat{name: name, expBits: expBits, fracBits: fracBits}
	inf := f.inf()
	for p := uint16(0); p < inf; p++ {
		f.values = append(f.values, f.decode(p))
		f.patterns = append(f.patterns, p)
	}
	f.values = append(f.values, math.Pow(2, float64(f.bias()+1)))
	f.patterns = append(f.patterns, inf)
	if !sort.Float64sAreSorted(f.values) {
		panic(name + ": reference values not sorted")
	}
	return f
}

func (f *refFormat) bias() int      { return 1<<(f.expBits-1) - 1 }
func (f *refFormat) inf() uint16    { return uint16(1<<f.expBits-1) << f.fracBits }
func (f *refFormat) sign() uint16   { return 1 << (f.expBits + f.fracBits) }
func (f *refFormat) maxFin() uint16 { return f.inf() - 1 }

// isNaN reports whether p is a NaN pattern: all exponent bits set and a
// non-zero fraction.
func (f *refFormat) isNaN(p uint16) bool {
	return p&f.inf() == f.inf() && p&(1<<f.fracBits-1) != 0
}

// decode computes the value of bit pattern p straight from the definition:
// (-1)^s * 2^(e-bias) * (1 + m/2^fracBits) for normal numbers and
// (-1)^s * 2^(1-bias) * m/2^fracBits for subnormals.
func (f *refFormat) decode(p uint16) float64 {
	s := 1.0
	if p&f.sign() != 0 {
		s = -1
	}
	e := int(p>>f.fracBits) & (1<<f.expBits - 1)
	scale := math.Pow(2, float64(f.fracBits))
	m := float64(p & (1<<f.fracBits - 1))
	switch e {
	case 0:
		return s * math.Pow(2, float64(1-f.bias())) * (m / scale)
	case 1<<f.expBits - 1:
		if m == 0 {
			return math.Inf(int(s))
		}
		return math.NaN()
	}
	return s * math.Pow(2, float64(e-f.bias())) * (1 + m/scale)
}

// nearest returns the pattern of the representable value nearest to x,
// ties to the pattern with an even last bit, by binary search over the
// sorted values. The comparisons are against exact midpoints, so no
// float64 rounding enters. x must not be NaN.
func (f *refFormat) nearest(x float64) uint16 {
	var s uint16
	if math.Signbit(x) {
		s = f.sign()
	}
	a := math.Abs(x)
	top := len(f.values) - 1
	if a >= f.values[top] {
		return s | f.inf()
	}
	i := sort.SearchFloat64s(f.values, a) // first values[i] >= a
	if f.values[i] == a {
		return s | f.patterns[i]
	}
	lo, hi := i-1, i
	mid := (f.values[lo] + f.values[hi]) / 2
	switch {
	case a < mid:
		return s | f.patterns[lo]
	case a > mid:
		return s | f.patterns[hi]
	case f.patterns[lo]&1 == 0:
		return s | f.patterns[lo]
	}
	return s | f.patterns[hi]
}

var (
	refF16  = newRefFormat("f16", 5, 10)
	refBF16 = newRefFormat("bf16", 8, 7)
)

// sameFloat reports whether got is exactly want, including the sign of
// zero; two NaNs count as the same.
func sameFloat(got, want float64) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	return got == want && math.Signbit(got) == math.Signbit(want)
}

// mustPanic runs f and fails unless it panics with a message containing
// every string in want.
func mustPanic(t *testing.T, name string, f func(), want ...string) {
	t.Helper()
	r := catch(f)
	if r == nil {
		t.Errorf("%s: no panic", name)
		return
	}
	msg, _ := r.(string)
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: panic %q does not mention %q", name, msg, w)
		}
	}
	t.Logf("%s: panicked: %s", name, msg)
}

// catch runs f and returns what it panicked with, or nil.
func catch(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// TestReferenceSelfCheck guards the references themselves with values
// known from the standards.
func TestReferenceSelfCheck(t *testing.T) {
	checks := []struct {
		f    *refFormat
		p    uint16
		want float64
	}{
		{refF16, 0x3c00, 1},
		{refF16, 0xc000, -2},
		{refF16, 0x7bff, 65504},
		{refF16, 0x0400, math.Pow(2, -14)},
		{refF16, 0x0001, math.Pow(2, -24)},
		{refF16, 0x3555, 0.333251953125},
		{refBF16, 0x3f80, 1},
		{refBF16, 0x7f7f, 3.3895313892515355e38},
		{refBF16, 0x0001, math.Pow(2, -133)},
		{refBF16, 0xc040, -3},
	}
	for _, c := range checks {
		if got := c.f.decode(c.p); got != c.want {
			t.Errorf("%s decode(%#04x) = %g, want %g", c.f.name, c.p, got, c.want)
		}
	}
	if n := len(refF16.values); n != 0x7c01 {
		t.Errorf("f16 reference has %d values, want %d", n, 0x7c01)
	}
	if got := refF16.nearest(1 + math.Pow(2, -11)); got != 0x3c00 {
		t.Errorf("f16 nearest(1+2^-11) = %#04x, want 0x3c00", got)
	}
	if got := refF16.nearest(1 + 3*math.Pow(2, -11)); got != 0x3c02 {
		t.Errorf("f16 nearest(1+3*2^-11) = %#04x, want 0x3c02", got)
	}
	if got := refF16.nearest(-1e6); got != 0xfc00 {
		t.Errorf("f16 nearest(-1e6) = %#04x, want 0xfc00", got)
	}
}
