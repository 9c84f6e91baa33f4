package cudatest

import (
	"math"
	"sort"
	"testing"

	"github.com/headroom-ml/headroom/device"
)

// Workspace returns the bytes of the one block a cuda device holds from
// Open on: its cuBLAS workspace (tag workspace, op "cublas"). It fails t
// when d holds no such block.
func Workspace(t testing.TB, d *device.Device) int64 {
	t.Helper()
	for _, g := range d.Live() {
		if g.Tag == device.Workspace && g.Creator == "cublas" && g.Blocks == 1 {
			return g.Bytes
		}
	}
	t.Fatalf("cudatest: %s holds no cuBLAS workspace block: %v", d.Name(), d.Live())
	return 0
}

// WithWorkspace returns the Stats of a meta (or cpu) device m as the cuda
// device g should read them after the same allocations: with g's name and
// capacity and one more allocation of ws bytes (the cuBLAS workspace, a
// multiple of the granularity and of the segment rounding) in a segment
// of its own, committed whole and live since Open — so in every current
// and peak — under tag workspace.
func WithWorkspace(m, g device.Stats, ws int64) device.Stats {
	add := func(c *device.Counter) {
		c.Current += ws
		c.Peak += ws
		c.Allocated += ws
		c.Allocs++
	}
	m.Device, m.Capacity = g.Device, g.Capacity
	add(&m.Requested)
	add(&m.Allocated)
	add(&m.Reserved)
	add(&m.ByTag[device.Workspace])
	m.AtPeak[device.Workspace] += ws
	m.Segments++
	return m
}

// SameStats fails t, naming each counter that differs, unless the cuda
// device's Stats g are WithWorkspace(m, g, ws).
func SameStats(t testing.TB, when string, m, g device.Stats, ws int64) {
	t.Helper()
	want := WithWorkspace(m, g, ws)
	if g == want {
		return
	}
	t.Errorf("%s: cuda's accounting differs from meta's plus the workspace block (%d bytes)", when, ws)
	diff := func(name string, want, got device.Counter) {
		if want != got {
			t.Errorf("  %s: cuda %+v, want %+v", name, got, want)
		}
	}
	diff("requested", want.Requested, g.Requested)
	for tag := range device.NumTags {
		diff(tag.String(), want.ByTag[tag], g.ByTag[tag])
		if want.AtPeak[tag] != g.AtPeak[tag] {
			t.Errorf("  at peak %s: cuda %d, want %d", tag, g.AtPeak[tag], want.AtPeak[tag])
		}
	}
	diff("allocated", want.Allocated, g.Allocated)
	diff("reserved", want.Reserved, g.Reserved)
	t.Errorf("  segments cuda %d want %d, largest free %d want %d, OOMs %d want %d, flushes %d want %d",
		g.Segments, want.Segments, g.LargestFree, want.LargestFree, g.OOMs, want.OOMs, g.CacheFlushes, want.CacheFlushes)
}

// Noise says which elements of a tensor (by name, index and the tensor's
// length) CloseValues bounds by an absolute noiseBound instead: those
// whose true gradient is zero, which each device's optimizer moves by its
// own rounding noise.
type Noise func(name string, i, n int) bool

// CloseValues checks every tensor of got (cuda's) against want (cpu's, or
// a twin's) by name: the same tensors, the same lengths, every element
// within tol times the largest |element| of the want tensor — or, where
// noise (nil: none) says so, within noiseBound — and no NaN. It logs and
// returns the worst |Δ|/max|want| of the elements not under noise.
func CloseValues(t testing.TB, when string, want, got map[string][]float64, tol float64, noise Noise, noiseBound float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d tensors, want %d", when, len(got), len(want))
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	worst, worstName, worstNoise := 0.0, "", 0.0
	for _, n := range names {
		w, g := want[n], got[n]
		if len(g) != len(w) {
			t.Errorf("%s: %s has %d elements, want %d", when, n, len(g), len(w))
			continue
		}
		scale := 0.0
		for _, x := range w {
			scale = max(scale, math.Abs(x))
		}
		for i := range w {
			d := math.Abs(g[i] - w[i])
			if noise != nil && noise(n, i, len(w)) {
				worstNoise = max(worstNoise, d)
				if d > noiseBound || math.IsNaN(g[i]) {
					t.Errorf("%s: %s[%d] (zero true gradient) = %.9g, want %.9g (|Δ| %.3g > %g)", when, n, i, g[i], w[i], d, noiseBound)
				}
				continue
			}
			if scale > 0 && d/scale > worst {
				worst, worstName = d/scale, n
			}
			if d > tol*scale || math.IsNaN(g[i]) {
				t.Errorf("%s: %s[%d] = %.9g, want %.9g (|Δ| %.3g > %g × max|want| %.3g)", when, n, i, g[i], w[i], d, tol, scale)
				break
			}
		}
	}
	t.Logf("%s: %d tensors, worst |Δ|/max|want| %.3g (%s); zero-gradient elements: worst |Δ| %.3g", when, len(names), worst, worstName, worstNoise)
	return worst
}
