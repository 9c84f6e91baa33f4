package cpu_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// BenchmarkGeluBF16: the tanh GELU forward and backward on a 4096×1024
// BF16 activation (a GPT MLP's hidden layer), in registers or by tiles.
func BenchmarkGeluBF16(b *testing.B) {
	d := cpu.New(0, device.Options{})
	k := d.Kernels()
	h := halfRig{d, rand.New(rand.NewPCG(1, 2))}
	x, y, dy, dx := h.operand(dtype.BF16, 4096, 1024), h.operand(dtype.BF16, 4096, 1024), h.operand(dtype.BF16, 4096, 1024), h.operand(dtype.BF16, 4096, 1024)
	for _, mode := range []struct {
		name string
		on   bool
	}{{"registers", true}, {"tiles", false}} {
		b.Run(mode.name, func(b *testing.B) {
			defer cpu.SetInRegister(mode.on)()
			for range b.N {
				k.Unary(device.GeluTanh, y, x, 0)
				k.UnaryGrad(device.GeluTanh, dx, dy, x, device.Operand{}, 0)
			}
		})
	}
}
