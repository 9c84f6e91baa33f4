package cpu_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestReduceHalfMatchesWidened: the sum and mean over outer axes of a BF16
// or F16 operand (a bias gradient), read as 16-bit, store the bytes that
// widening the operand first gives, into F32 and BF16 outputs; a 16-bit
// max takes the widening path either way.
func TestReduceHalfMatchesWidened(t *testing.T) {
	d := cpu.New(0, device.Options{})
	k := d.Kernels()
	h := halfRig{d, rand.New(rand.NewPCG(7, 2))}
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
		for _, c := range []struct{ shape, dshape []int }{
			{[]int{3, 17, 600}, []int{1, 1, 600}},
			{[]int{5, 33}, []int{1, 33}},
		} {
			src := h.operand(dt, c.shape...)
			for _, out := range []dtype.DType{dtype.F32, dtype.BF16} {
				dst := h.operand(out, c.dshape...)
				for _, op := range []device.ReduceOp{device.Sum, device.Mean, device.Max} {
					twice(t, dt.String()+" reduce", []device.Operand{dst, src}, []int{0}, func(o []device.Operand) {
						k.Reduce(op, o[0], o[1], 0)
					})
				}
			}
		}
	}
}
