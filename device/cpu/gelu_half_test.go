package cpu_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestGeluHalfMatchesTiles: the BF16 tanh GELU and its gradient, in
// registers, store the bytes of the tile path; an F16 GELU takes the tile
// path either way.
func TestGeluHalfMatchesTiles(t *testing.T) {
	d := cpu.New(0, device.Options{})
	k := d.Kernels()
	h := halfRig{d, rand.New(rand.NewPCG(6, 1))}
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
		x, y, dy, dx := h.operand(dt, 3, 1001), h.operand(dt, 3, 1001), h.operand(dt, 3, 1001), h.operand(dt, 3, 1001)
		twice(t, dt.String()+" gelu", []device.Operand{y, x}, []int{0}, func(o []device.Operand) {
			k.Unary(device.GeluTanh, o[0], o[1], 0)
		})
		twice(t, dt.String()+" gelu grad", []device.Operand{dx, dy, x}, []int{0}, func(o []device.Operand) {
			k.UnaryGrad(device.GeluTanh, o[0], o[1], o[2], device.Operand{}, 0)
		})
	}
}
