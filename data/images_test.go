package data

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestSyntheticImages checks sizes, determinism and the class structure:
// two images of one class differ by at most 63 per pixel (each is the
// prototype ± noise in [−32, 31]), images of different classes by much more.
func TestSyntheticImages(t *testing.T) {
	m := SyntheticImages(300, 3, 4, 5, 7, 42)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if m.N != 300 || m.C != 3 || m.H != 4 || m.W != 5 || m.Classes != 7 {
		t.Fatalf("sizes N=%d C=%d H=%d W=%d classes=%d, want 300 3 4 5 7", m.N, m.C, m.H, m.W, m.Classes)
	}
	if again := SyntheticImages(300, 3, 4, 5, 7, 42); !bytes.Equal(again.Pixels, m.Pixels) || !bytes.Equal(again.Labels, m.Labels) {
		t.Errorf("the same seed gave different sets")
	}
	if other := SyntheticImages(300, 3, 4, 5, 7, 43); bytes.Equal(other.Pixels, m.Pixels) {
		t.Errorf("another seed gave the same pixels")
	}
	counts := m.Counts()
	t.Logf("label counts %v", counts)
	for c, n := range counts {
		if n < 20 || n > 70 { // expected 300/7 ≈ 43, sd ≈ 6
			t.Errorf("class %d has %d images of 300, want about 43", c, n)
		}
	}
	d := 3 * 4 * 5
	var same, diff, nSame, nDiff float64
	for i := range 60 {
		for j := i + 1; j < 60; j++ {
			a, b := m.Pixels[i*d:(i+1)*d], m.Pixels[j*d:(j+1)*d]
			var sum float64
			for k := range a {
				delta := int(a[k]) - int(b[k])
				if m.Labels[i] == m.Labels[j] && (delta > 63 || delta < -63) {
					t.Fatalf("images %d and %d of class %d differ by %d at pixel %d, want at most 63", i, j, m.Labels[i], delta, k)
				}
				sum += float64(max(delta, -delta))
			}
			if m.Labels[i] == m.Labels[j] {
				same, nSame = same+sum/float64(d), nSame+1
			} else {
				diff, nDiff = diff+sum/float64(d), nDiff+1
			}
		}
	}
	t.Logf("mean |difference| per pixel: same class %.1f, different classes %.1f", same/nSame, diff/nDiff)
	if same/nSame > 30 || diff/nDiff < 60 {
		t.Errorf("same-class difference %.1f, different-class %.1f: want about 21 and 85", same/nSame, diff/nDiff)
	}
}

func TestBelow(t *testing.T) {
	src := rand.NewPCG(1, 2)
	var counts [3]int
	for range 30000 {
		counts[below(src, 3)]++
	}
	for v, c := range counts {
		if c < 9500 || c > 10500 {
			t.Errorf("below(3) gave %d %d times in 30000, want about 10000", v, c)
		}
	}
	if got := below(src, 1); got != 0 {
		t.Errorf("below(1) = %d, want 0", got)
	}
}
