package cuda

import (
	"fmt"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// statDTypes are the dtypes the statistics of a call on dt may have: the
// compute dtype, and dt itself for 16-bit inputs.
func statDTypes(dt dtype.DType) []dtype.DType {
	switch dt {
	case dtype.F16, dtype.BF16:
		return []dtype.DType{dtype.F32, dt}
	}
	return []dtype.DType{dt}
}

func TestLayerNorm(t *testing.T) {
	g := newRig(t)
	for _, dt := range floatDTypes() {
		for _, sdt := range statDTypes(dt) {
			for _, sh := range [][2]int{{3, 7}, {2, 40}, {4, 600}, {1, 1}} {
				for _, affine := range []string{"wb", "w", "none"} {
					t.Run(fmt.Sprintf("%s/stats=%s/%dx%d/%s", dt, sdt, sh[0], sh[1], affine), func(t *testing.T) {
						g.t = t
						layerNormCase(g, dt, sdt, sh[0], sh[1], affine)
					})
				}
			}
		}
	}
}

func layerNormCase(g *rig, dt, sdt dtype.DType, rows, cols int, affine string) {
	x, y := g.rand(dt, rows, cols), g.rand(dt, rows, cols)
	mean, rstd := g.rand(sdt, rows), g.rand(sdt, rows)
	w, b := none(), none()
	if affine != "none" {
		w = g.rand(dt, cols)
	}
	if affine == "wb" {
		b = g.rand(dt, cols)
	}
	const eps = 1e-5
	g.both(func(k device.Kernels, o func(twin) device.Operand) {
		k.LayerNorm(o(y), o(mean), o(rstd), o(x), o(w), o(b), rows, cols, eps)
	})
	tol := rowTol(dt)
	g.check("LayerNorm y", y, tol)
	g.check("LayerNorm mean", mean, rowTol(sdt))
	g.check("LayerNorm rstd", rstd, rowTol(sdt))
	// dw and db start as garbage: they are overwritten, not accumulated.
	dy, dx, dw, db := g.rand(dt, rows, cols), g.rand(dt, rows, cols), g.rand(dt, cols), g.rand(dt, cols)
	g.both(func(k device.Kernels, o func(twin) device.Operand) {
		k.LayerNormGrad(o(dx), o(dw), o(db), o(dy), o(x), o(w), o(mean), o(rstd), rows, cols)
	})
	g.check("LayerNormGrad dx", dx, 4*tol)
	g.check("LayerNormGrad dw", dw, 4*tol)
	g.check("LayerNormGrad db", db, 4*tol)
	// Only dw wanted; then only dx.
	dw2, dx2 := g.rand(dt, cols), g.rand(dt, rows, cols)
	g.both(func(k device.Kernels, o func(twin) device.Operand) {
		k.LayerNormGrad(o(none()), o(dw2), o(none()), o(dy), o(x), o(w), o(mean), o(rstd), rows, cols)
		k.LayerNormGrad(o(dx2), o(none()), o(none()), o(dy), o(x), o(w), o(mean), o(rstd), rows, cols)
	})
	g.check("LayerNormGrad dw alone", dw2, 4*tol)
	g.check("LayerNormGrad dx alone", dx2, 4*tol)
}
