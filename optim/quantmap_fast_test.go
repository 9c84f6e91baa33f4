package optim

import (
	"math"
	"math/rand"
	"testing"
)

// checkLookup fails t when the fast lookup and the binary search disagree on x.
func checkLookup(t *testing.T, name string, m *quantMap, q *quantLookup, x float32) {
	t.Helper()
	if got, want := q.nearest(x), m.nearest(x); got != want {
		t.Fatalf("%s: x=%v (bits %#08x): fast lookup gives code %d, binary search %d", name, x, math.Float32bits(x), got, want)
	}
}

// lookupProbes returns the values the fast lookup must agree on: every map
// value and every float32 midpoint of neighbours with their float32
// neighbours, ±0, the smallest denormals, values at and beyond ±1,
// infinities and NaN.
func lookupProbes(m *quantMap) []float32 {
	xs := []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		1e-40, -1e-40, 1, -1, 1.0000001, -1.0000001, 2, -2, 1e6, -1e6, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32}
	around := func(v float32) {
		up, down := v, v
		for range 3 {
			xs = append(xs, up, down)
			up, down = math.Nextafter32(up, 2), math.Nextafter32(down, -2)
		}
	}
	for i := range m {
		around(m[i])
		if i > 0 {
			around((m[i-1] + m[i]) / 2)
			around(float32((float64(m[i-1]) + float64(m[i])) / 2))
		}
	}
	for k := range lookupKeys { // every bucket edge
		around(bucketLowest(k))
	}
	return xs
}

// TestQuantLookupMatchesSearch: the fast lookup equals the binary search on
// every boundary probe and on 1e6 random values over many decades, both signs.
func TestQuantLookupMatchesSearch(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, c := range []struct {
		name string
		m    *quantMap
		q    *quantLookup
	}{{"signed", &signedMap, signedLookup}, {"unsigned", &unsignedMap, unsignedLookup}} {
		for _, x := range lookupProbes(c.m) {
			checkLookup(t, c.name, c.m, c.q, x)
		}
		for range 1000000 {
			x := float32(math.Pow(10, -12*rng.Float64()))
			if rng.Intn(2) == 0 {
				x = -x
			}
			checkLookup(t, c.name, c.m, c.q, x)
		}
	}
}

// TestQuantLookupBlock: the fast quantiseBlock writes the same codes and
// absmax as the reference on a block whose values span 8 decades.
func TestQuantLookupBlock(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	src := make([]float32, 4096)
	for i := range src {
		src[i] = float32((rng.Float64() - 0.5) * math.Pow(10, -8*rng.Float64()))
	}
	want, got := make([]uint8, len(src)), make([]uint8, len(src))
	wmax := signedMap.quantiseBlock(want, src)
	gmax := signedLookup.quantiseBlock(got, src)
	if wmax != gmax {
		t.Fatalf("absmax %v, reference %v", gmax, wmax)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("element %d (%v): code %d, reference %d", i, src[i], got[i], want[i])
		}
	}
}

// BenchmarkQuantiseBlock times the reference and the fast quantiseBlock on
// one 2048-element block of the signed map, in the same binary.
func BenchmarkQuantiseBlock(b *testing.B) {
	rng := rand.New(rand.NewSource(5))
	src := make([]float32, 2048)
	for i := range src {
		src[i] = float32((rng.Float64() - 0.5) * math.Pow(10, -6*rng.Float64()))
	}
	codes := make([]uint8, len(src))
	b.Run("search", func(b *testing.B) {
		for range b.N {
			signedMap.quantiseBlock(codes, src)
		}
	})
	b.Run("lookup", func(b *testing.B) {
		for range b.N {
			signedLookup.quantiseBlock(codes, src)
		}
	})
}
