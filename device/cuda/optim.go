package cuda

import (
	"math"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Optimizer updates of kernels/optim.cu. The factors that do not depend on
// the element are computed here exactly as package kernels computes them.

func (k *kern) AdamStep(p, g, m, v device.Operand, a device.AdamArgs) {
	k.optimOperands("adam_step", p, g, m, v)
	n := p.Len()
	if n == 0 {
		return
	}
	t := float64(a.Step)
	stepSize := a.LR / (1 - math.Pow(a.Beta1, t))
	bc2 := math.Sqrt(1 - math.Pow(a.Beta2, t))
	decay, coupled := 1.0, 0.0
	if a.Decoupled {
		decay = 1 - a.LR*a.WeightDecay
	} else {
		coupled = a.WeightDecay
	}
	k.launch("adam_"+Suffix(p.DType)+"_"+Suffix(g.DType), Linear(n), k.Ptr(p), k.Ptr(g), k.Ptr(m), k.Ptr(v), I64(int64(n)),
		F64(stepSize), F64(bc2), F64(a.Beta1), F64(a.Beta2), F64(a.Eps), F64(decay), F64(coupled))
}

func (k *kern) SGDStep(p, g, buf device.Operand, a device.SGDArgs) {
	if a.Momentum != 0 && buf.Nil() {
		k.bad("sgd_step", "momentum %g without a buffer", a.Momentum)
	}
	k.optimOperands("sgd_step", p, g, buf)
	n := p.Len()
	if n == 0 {
		return
	}
	k.launch("sgd_"+Suffix(p.DType)+"_"+Suffix(g.DType), Linear(n), k.Ptr(p), k.Ptr(g), k.Ptr(buf), I64(int64(n)),
		F64(a.LR), F64(a.Momentum), F64(a.Dampening), F64(a.WeightDecay), Int(b2i(a.Nesterov)), Int(b2i(a.First)))
}

// optimOperands panics unless p is F32 or F64 and every present operand is
// contiguous, of p's length and of p's dtype, but the gradient (the first
// of os), which may be F16 or BF16 for an F32 parameter.
func (k *kern) optimOperands(op string, p device.Operand, os ...device.Operand) {
	if p.DType != dtype.F32 && p.DType != dtype.F64 {
		k.bad(op, "parameter dtype %s, want F32 or F64", p.DType)
	}
	k.contiguous(op, p)
	for i, o := range os {
		if o.Nil() {
			if i == 0 {
				k.bad(op, "no gradient")
			}
			continue
		}
		half := i == 0 && p.DType == dtype.F32 && o.DType.IsLowPrecision()
		if o.DType != p.DType && !half {
			k.bad(op, "operand %d has dtype %s, parameter %s", i+1, o.DType, p.DType)
		}
		k.sameLen(op, p, o)
		k.contiguous(op, o)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
