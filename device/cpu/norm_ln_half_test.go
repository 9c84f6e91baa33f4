package cpu_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestLayerNormGradHalfMatchesWidened: LayerNormGrad on BF16 and F16 dy, x
// and dx, read as 16-bit a row at a time, stores the bytes of the path
// that widens them whole, with F32 and BF16 w, dw and db, and with dx or
// dw and db absent.
func TestLayerNormGradHalfMatchesWidened(t *testing.T) {
	d := cpu.New(0, device.Options{})
	k := d.Kernels()
	h := halfRig{d, rand.New(rand.NewPCG(9, 1))}
	const rows, cols = 37, 45
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
		for _, pt := range []dtype.DType{dtype.F32, dtype.BF16} {
			dx, dy, x := h.operand(dt, rows, cols), h.operand(dt, rows, cols), h.operand(dt, rows, cols)
			w, dw, db := h.operand(pt, cols), h.operand(pt, cols), h.operand(pt, cols)
			mean, rstd := h.operand(dtype.F32, rows), h.operand(dtype.F32, rows)
			what := dt.String() + " with " + pt.String() + " layer norm grad"
			twice(t, what, []device.Operand{dx, dw, db, dy, x, w, mean, rstd}, []int{0, 1, 2}, func(o []device.Operand) {
				k.LayerNormGrad(o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], rows, cols)
			})
			twice(t, what+" (no dx)", []device.Operand{dw, db, dy, x, w, mean, rstd}, []int{0, 1}, func(o []device.Operand) {
				k.LayerNormGrad(device.Operand{}, o[0], o[1], o[2], o[3], o[4], o[5], o[6], rows, cols)
			})
			twice(t, what+" (dx only)", []device.Operand{dx, dy, x, w, mean, rstd}, []int{0}, func(o []device.Operand) {
				k.LayerNormGrad(o[0], device.Operand{}, device.Operand{}, o[1], o[2], o[3], o[4], o[5], rows, cols)
			})
		}
	}
}
