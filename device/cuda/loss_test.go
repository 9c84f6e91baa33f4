package cuda

import (
	"fmt"
	"math"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

func TestCrossEntropy(t *testing.T) {
	g := newRig(t)
	const ignore = -100
	for _, dt := range floatDTypes() {
		for _, sdt := range statDTypes(dt) {
			for _, tdt := range []dtype.DType{dtype.I64, dtype.I32, dtype.I8} {
				for _, cols := range []int{5, 300} {
					for _, eps := range []float64{0, 0.1} {
						t.Run(fmt.Sprintf("%s/stats=%s/%s/cols=%d/eps=%g", dt, sdt, tdt, cols, eps), func(t *testing.T) {
							g.t = t
							// Rows 1 and 4 are ignored.
							target := []float64{3, ignore, float64(cols - 1), 0, ignore, 2}
							if tdt == dtype.I8 {
								target[1], target[4] = -1, -1
							}
							ig := int(target[1])
							crossEntropyCase(g, dt, sdt, tdt, target, cols, ig, eps)
						})
					}
				}
			}
		}
	}
}

// computeOf is the compute dtype of dt.
func computeOf(dt dtype.DType) dtype.DType {
	if dt == dtype.F64 {
		return dt
	}
	return dtype.F32
}

func crossEntropyCase(g *rig, dt, sdt, tdt dtype.DType, target []float64, cols, ignore int, eps float64) {
	rows := len(target)
	logits, tg := g.rand(dt, rows, cols), g.of(tdt, target, rows)
	loss, lse := g.rand(sdt, rows), g.rand(sdt, rows)
	g.both(func(k device.Kernels, o func(twin) device.Operand) {
		k.CrossEntropy(o(loss), o(lse), o(logits), o(tg), rows, cols, ignore, eps)
	})
	g.check("CrossEntropy loss", loss, rowTol(sdt))
	g.check("CrossEntropy lse", lse, rowTol(sdt))
	dloss, dz := g.rand(sdt, rows), g.rand(dt, rows, cols)
	g.both(func(k device.Kernels, o func(twin) device.Operand) {
		k.CrossEntropyGrad(o(dz), o(dloss), o(logits), o(lse), o(tg), rows, cols, ignore, eps)
	})
	g.check("CrossEntropyGrad dlogits", dz, rowTol(dt))
}

// TestCrossEntropyAllIgnored: every row ignored gives zero losses and
// zero gradients, with the rows' lse still written.
func TestCrossEntropyAllIgnored(t *testing.T) {
	g := newRig(t)
	const rows, cols = 3, 4
	logits, tg := g.rand(dtype.F32, rows, cols), g.of(dtype.I64, []float64{-1, -1, -1}, rows)
	loss, lse, dloss, dz := g.rand(dtype.F32, rows), g.rand(dtype.F32, rows), g.rand(dtype.F32, rows), g.rand(dtype.F32, rows, cols)
	g.both(func(k device.Kernels, o func(twin) device.Operand) {
		k.CrossEntropy(o(loss), o(lse), o(logits), o(tg), rows, cols, -1, 0.1)
		k.CrossEntropyGrad(o(dz), o(dloss), o(logits), o(lse), o(tg), rows, cols, -1, 0.1)
	})
	g.check("CrossEntropy lse", lse, rowTol(dtype.F32))
	for _, x := range []struct {
		name string
		tw   twin
	}{{"loss", loss}, {"dlogits", dz}} {
		_, got := g.floats(x.tw)
		for i, v := range got {
			if v != 0 {
				t.Errorf("%s[%d] = %g with every row ignored, want 0", x.name, i, v)
			}
		}
	}
	if _, v := g.floats(lse); math.IsNaN(v[0]) || v[0] == 0 {
		t.Errorf("lse[0] = %g, want the row's log-sum-exp", v[0])
	}
}
