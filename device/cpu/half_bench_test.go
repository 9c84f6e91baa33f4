package cpu_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// BenchmarkHalfOps times the BF16 ops of a ResNet-18 step (first stage,
// batch 32: 32×64×32×32; GELU, a GPT's, on the same shape) through the in-register kernels ("register")
// and through the widening they replace ("tiles": the 4096-element tiles
// of Unary, UnaryGrad and Binary; a float32 copy of each operand's extent
// for batch norm and Axpy), in one binary: compare the two with -count
// and benchstat.
func BenchmarkHalfOps(b *testing.B) {
	d := cpu.New(0, device.Options{})
	k := d.Kernels()
	h := halfRig{d, rand.New(rand.NewPCG(1, 2))}
	const n, c, hw = 32, 64, 32 * 32
	shape := []int{n, c, 32, 32}
	op := func() device.Operand { return h.operand(dtype.BF16, shape...) }
	x, y, dy, dx, a := op(), op(), op(), op(), op()
	f32 := func() device.Operand { return h.operand(dtype.F32, c) }
	w, bias, mean, invstd, rm, rv, dw, db := f32(), f32(), f32(), f32(), f32(), f32(), f32(), f32()
	k.Fill(rv, 1)
	cases := []struct {
		name string
		f    func()
	}{
		{"relu", func() { k.Unary(device.Relu, y, x, 0) }},
		{"relu-grad", func() { k.UnaryGrad(device.Relu, dx, dy, x, y, 0) }},
		{"gelu", func() { k.Unary(device.GeluTanh, y, x, 0) }},
		{"gelu-grad", func() { k.UnaryGrad(device.GeluTanh, dx, dy, x, device.Operand{}, 0) }},
		{"add", func() { k.Binary(device.Add, y, x, a) }},
		{"axpy", func() { k.Axpy(0.5, x, a) }},
		{"bn-train", func() { k.BatchNorm(y, mean, invstd, x, w, bias, rm, rv, n, c, hw, true, 0.1, 1e-5) }},
		{"bn-grad", func() { k.BatchNormGrad(dx, dw, db, dy, x, w, mean, invstd, n, c, hw, true) }},
	}
	for _, cs := range cases {
		for _, on := range []bool{false, true} {
			name := cs.name + "/tiles"
			if on {
				name = cs.name + "/register"
			}
			b.Run(name, func(b *testing.B) {
				defer cpu.SetInRegister(on)()
				b.SetBytes(int64(2 * n * c * hw))
				for b.Loop() {
					cs.f()
				}
			})
		}
	}
}
