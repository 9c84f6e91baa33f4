package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// optimDTypes are the (parameter, gradient) dtype pairs the optimizer
// kernels take.
var optimDTypes = [][2]dtype.DType{{dtype.F64, dtype.F64}, {dtype.F32, dtype.F32}, {dtype.F32, dtype.F16}, {dtype.F32, dtype.BF16}}

// TestAdamStep: Adam and AdamW, three steps, against the cpu device: p, m
// and v within the tolerance of the parameter's dtype (both compute each
// element in double and round once).
func TestAdamStep(t *testing.T) {
	p := devices(t)
	r := rand.New(rand.NewPCG(31, 32))
	const n = 1000
	for _, dts := range optimDTypes {
		for _, decoupled := range []bool{false, true} {
			pd, gd := dts[0], dts[1]
			w := p.put(t, dense(pd, n), values(r, pd, n, false))
			m := p.put(t, dense(pd, n), nil)
			v := p.put(t, dense(pd, n), nil)
			for step := 1; step <= 3; step++ {
				g := p.put(t, dense(gd, n), values(r, gd, n, false))
				a := device.AdamArgs{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, Step: step, Decoupled: decoupled}
				p.cpu.Kernels().AdamStep(w.cpu, g.cpu, m.cpu, v.cpu, a)
				p.gpu.Kernels().AdamStep(w.gpu, g.gpu, m.gpu, v.gpu, a)
			}
			for i, o := range []twin{w, m, v} {
				c, g := p.read(o)
				near(t, fmt.Sprintf("%s/%s/decoupled %v/operand %d", pd, gd, decoupled, i), pd, c, g, tolerance(pd))
			}
		}
	}
}

// TestSGDStep: plain SGD, momentum (first step and after), dampening and
// Nesterov, against the cpu device.
func TestSGDStep(t *testing.T) {
	p := devices(t)
	r := rand.New(rand.NewPCG(33, 34))
	const n = 777
	args := []device.SGDArgs{
		{LR: 0.1, WeightDecay: 0.01},
		{LR: 0.1, Momentum: 0.9, Dampening: 0.1, WeightDecay: 0.01},
		{LR: 0.05, Momentum: 0.8, Nesterov: true},
	}
	for _, dts := range optimDTypes {
		for ai, a := range args {
			pd, gd := dts[0], dts[1]
			w := p.put(t, dense(pd, n), values(r, pd, n, false))
			buf := nilTwin(pd)
			if a.Momentum != 0 {
				buf = p.put(t, dense(pd, n), nil)
			}
			for step := 0; step < 3; step++ {
				a.First = step == 0
				g := p.put(t, dense(gd, n), values(r, gd, n, false))
				p.cpu.Kernels().SGDStep(w.cpu, g.cpu, buf.cpu, a)
				p.gpu.Kernels().SGDStep(w.gpu, g.gpu, buf.gpu, a)
			}
			c, g := p.read(w)
			near(t, fmt.Sprintf("%s/%s/args %d/p", pd, gd, ai), pd, c, g, tolerance(pd))
			if a.Momentum != 0 {
				c, g := p.read(buf)
				near(t, fmt.Sprintf("%s/%s/args %d/buf", pd, gd, ai), pd, c, g, tolerance(pd))
			}
		}
	}
}
