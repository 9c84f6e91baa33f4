package optim

import (
	"math"
	"math/rand"
	"testing"
)

// TestQuantMapShape checks the closed-form structure of both maps: sorted,
// 0 and ±1 present, and the unsigned map's 255 distinct non-zero levels.
func TestQuantMapShape(t *testing.T) {
	for _, signed := range []bool{true, false} {
		m := newQuantMap(signed)
		for i := 1; i < len(m); i++ {
			if m[i] < m[i-1] {
				t.Fatalf("signed=%v: map not sorted at %d: %v < %v", signed, i, m[i], m[i-1])
			}
		}
		if m[len(m)-1] != 1 {
			t.Fatalf("signed=%v: top level %v, want 1", signed, m[len(m)-1])
		}
		lo := float32(0)
		if signed {
			lo = -1
		}
		if m[0] != lo {
			t.Fatalf("signed=%v: bottom level %v, want %v", signed, m[0], lo)
		}
	}
}

// maxHalfGap returns half the widest gap between neighbouring map values
// around y: the worst rounding error nearest-code quantisation can make at y.
func maxHalfGap(m *quantMap, y float32) float64 {
	for i := 1; i < len(m); i++ {
		if y >= m[i-1] && y <= m[i] {
			return float64(m[i]-m[i-1]) / 2
		}
	}
	return 0
}

// TestQuantiseBlockRoundTrip quantises random blocks spanning several decades
// and checks each element's error against the bound from the map's spacing
// at that element (plus float32 rounding of the scale).
func TestQuantiseBlockRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, signed := range []bool{true, false} {
		m := newQuantMap(signed)
		src := make([]float32, 2048)
		for i := range src {
			x := float32(math.Pow(10, -6*rng.Float64()))
			if signed && rng.Intn(2) == 0 {
				x = -x
			}
			src[i] = x
		}
		codes := make([]uint8, len(src))
		back := make([]float32, len(src))
		absmax := m.quantiseBlock(codes, src)
		m.dequantiseBlock(back, codes, absmax)
		for i, x := range src {
			y := x / absmax
			bound := float64(absmax)*maxHalfGap(&m, y)*(1+1e-6) + 1e-6*math.Abs(float64(x))
			if err := math.Abs(float64(back[i] - x)); err > bound {
				t.Fatalf("signed=%v element %d: %v → %v, error %.3g > bound %.3g", signed, i, x, back[i], err, bound)
			}
		}
	}
}

// TestQuantiseZeroBlock: an all-zero block round-trips to zeros.
func TestQuantiseZeroBlock(t *testing.T) {
	m := newQuantMap(true)
	src := make([]float32, 16)
	codes := make([]uint8, 16)
	back := make([]float32, 16)
	for i := range back {
		back[i] = 7
	}
	m.dequantiseBlock(back, codes[:], m.quantiseBlock(codes, src))
	for i, v := range back {
		if v != 0 {
			t.Fatalf("element %d: %v, want 0", i, v)
		}
	}
}
