package cuda

import (
	"fmt"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// indices returns n random indices in [0, hi), the first two equal (a
// repeat).
func (g *rig) indices(n, hi int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(g.r.IntN(hi))
	}
	if n > 1 {
		v[1] = v[0]
	}
	return v
}

// TestIndexCopy: IndexSelect and Gather copy every dtype's bits, with
// every index dtype.
func TestIndexCopy(t *testing.T) {
	g := newRig(t)
	const outer, n, m, inner = 3, 7, 5, 33
	for _, dt := range []dtype.DType{dtype.F64, dtype.F32, dtype.BF16, dtype.I8, dtype.I64} {
		for _, idt := range []dtype.DType{dtype.I64, dtype.I32, dtype.I8} {
			t.Run(fmt.Sprintf("%s/%s", dt, idt), func(t *testing.T) {
				g.t = t
				src := g.rand(dt, outer, n, inner)
				idx := g.of(idt, g.indices(m, n), m)
				dst := g.rand(dt, outer, m, inner)
				g.both(func(k device.Kernels, o func(twin) device.Operand) {
					k.IndexSelect(o(dst), o(src), o(idx), outer, n, inner)
				})
				g.check("IndexSelect", dst, 0)
				gidx := g.of(idt, g.indices(outer*m*inner, n), outer, m, inner)
				gdst := g.rand(dt, outer, m, inner)
				g.both(func(k device.Kernels, o func(twin) device.Operand) {
					k.Gather(o(gdst), o(src), o(gidx), outer, n, m, inner)
				})
				g.check("Gather", gdst, 0)
			})
		}
	}
}

// TestIndexAdd: IndexAdd and ScatterAdd accumulate repeated indices as
// the cpu does (for F32 and F64 in the same order, so bit for bit), and
// the embedding-backward shape (outer 1, many rows) spans several bucket
// groups.
func TestIndexAdd(t *testing.T) {
	g := newRig(t)
	shapes := [][4]int{{3, 7, 5, 33}, {1, 300, 40, 9}}
	for _, dt := range floatDTypes() {
		for _, idt := range []dtype.DType{dtype.I64, dtype.I32} {
			for _, sh := range shapes {
				outer, n, m, inner := sh[0], sh[1], sh[2], sh[3]
				t.Run(fmt.Sprintf("%s/%s/%v", dt, idt, sh), func(t *testing.T) {
					g.t = t
					// F32 and F64 add in the cpu's order: bit for bit. 16-bit
					// destinations are rounded after each addition here (once
					// on the cpu), which costs up to half a step of the partial
					// sums per repeat: compared relative to the largest result.
					tol, check := 0.0, g.check
					if dt == dtype.F16 || dt == dtype.BF16 {
						tol, check = rowTol(dt), g.checkNorm
					}
					dst, src := g.rand(dt, outer, n, inner), g.rand(dt, outer, m, inner)
					idx := g.of(idt, g.indices(m, n), m)
					g.both(func(k device.Kernels, o func(twin) device.Operand) {
						k.IndexAdd(o(dst), o(idx), o(src), outer, n, inner)
					})
					check("IndexAdd", dst, tol)
					sdst := g.rand(dt, outer, n, inner)
					sidx := g.of(idt, g.indices(outer*m*inner, n), outer, m, inner)
					g.both(func(k device.Kernels, o func(twin) device.Operand) {
						k.ScatterAdd(o(sdst), o(sidx), o(src), outer, n, m, inner)
					})
					check("ScatterAdd", sdst, tol)
				})
			}
		}
	}
}
