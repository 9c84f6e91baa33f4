package cpu_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestOptimHalfGradTiles: an update of F32 parameters with an F16 or BF16
// gradient, widened tile by tile, gives the bytes of the same update with
// that gradient converted to F32 first (Adam, AdamW, SGD with momentum;
// sizes below, at and across tile boundaries).
func TestOptimHalfGradTiles(t *testing.T) {
	d := cpu.New(0, device.Options{})
	k := d.Kernels()
	h := halfRig{d: d, r: rand.New(rand.NewPCG(31, 32))}
	updates := []struct {
		name string
		f    func(ops []device.Operand) // p, g, m, v
	}{
		{"adam", func(o []device.Operand) {
			k.AdamStep(o[0], o[1], o[2], o[3], device.AdamArgs{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, Step: 3})
		}},
		{"adamw", func(o []device.Operand) {
			k.AdamStep(o[0], o[1], o[2], o[3], device.AdamArgs{LR: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1, Step: 1, Decoupled: true})
		}},
		{"sgd", func(o []device.Operand) {
			k.SGDStep(o[0], o[1], o[2], device.SGDArgs{LR: 1e-2, Momentum: 0.9, WeightDecay: 0.01, Nesterov: true})
		}},
	}
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
		for _, n := range []int{5, 4096, 3*4096 + 5} {
			g16 := h.operand(dt, n)
			g32 := h.operand(dtype.F32, n)
			v := make([]float64, n)
			dtype.ToF64(v, dt, g16.Block.Bytes())
			dtype.FromF64(dtype.F32, g32.Block.Bytes(), v)
			state := []device.Operand{h.operand(dtype.F32, n), h.operand(dtype.F32, n), h.operand(dtype.F32, n)}
			for i, x := range dtype.AsF32(state[2].Block.Bytes()) {
				dtype.AsF32(state[2].Block.Bytes())[i] = x * x // a second moment is not negative
			}
			for _, u := range updates {
				var want [][]byte
				for _, g := range []device.Operand{g32, g16} {
					ops := []device.Operand{h.copyOf(state[0]), g, h.copyOf(state[1]), h.copyOf(state[2])}
					u.f(ops)
					for j, i := range []int{0, 2, 3} {
						b := ops[i].Block.Bytes()
						if g.DType == dtype.F32 {
							want = append(want, append([]byte(nil), b...))
						} else if at := firstDiff(want[j], b); at >= 0 {
							t.Errorf("%s %s n=%d: operand %d byte %d differs from the F32-gradient update", u.name, dt, n, i, at)
						}
					}
				}
			}
		}
	}
}

// copyOf returns a new operand holding o's bytes.
func (h halfRig) copyOf(o device.Operand) device.Operand {
	b := h.d.MustAlloc(int64(len(o.Block.Bytes())), device.Label{Tag: device.Activation})
	copy(b.Bytes(), o.Block.Bytes())
	o.Block = b
	return o
}
