package cuda

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// indexSuffix checks that idx has an integer dtype the kernels read (I64,
// I32, I8) and returns its suffix.
func (k *kern) indexSuffix(op string, idx device.Operand) string {
	switch idx.DType {
	case dtype.I64, dtype.I32, dtype.I8:
		return Suffix(idx.DType)
	}
	k.bad(op, "index operand of dtype %s: want I64, I32 or I8", idx.DType)
	return ""
}

// ceSuffix checks CrossEntropy's dtypes: float logits (and their
// gradient), loss, lse (and dloss) in one statistics dtype, integer
// targets.
func (k *kern) ceSuffix(op string, logits, target device.Operand, stats ...device.Operand) string {
	dt := k.sameFloat(op, logits)
	suf := k.statSuffix(op, dt, stats[0].DType)
	for _, s := range stats[1:] {
		if s.DType != stats[0].DType {
			k.bad(op, "loss statistics of dtypes %s and %s: want one dtype", stats[0].DType, s.DType)
		}
	}
	return suf + "_" + k.indexSuffix(op, target)
}

// CrossEntropy runs cross_entropy_T_S_I (kernels/loss.cu). A target
// outside [0, cols) that is not ignore gives a NaN loss (the autograd op
// checks targets before the call).
func (k *kern) CrossEntropy(loss, lse, logits, target device.Operand, rows, cols, ignore int, smoothing float64) {
	suf := k.ceSuffix("CrossEntropy", logits, target, loss, lse)
	if rows == 0 {
		return
	}
	k.launch("cross_entropy_"+suf, rowsLaunch(rows, cols), k.Ptr(loss), k.Ptr(lse), k.Ptr(logits), k.Ptr(target),
		I64(int64(rows)), I64(int64(cols)), I64(int64(ignore)), F64(smoothing))
}

// CrossEntropyGrad runs cross_entropy_grad_T_S_I (kernels/loss.cu), one
// thread per logit.
func (k *kern) CrossEntropyGrad(dlogits, dloss, logits, lse, target device.Operand, rows, cols, ignore int, smoothing float64) {
	k.sameFloat("CrossEntropyGrad", logits, dlogits)
	suf := k.ceSuffix("CrossEntropyGrad", logits, target, dloss, lse)
	if rows*cols == 0 {
		return
	}
	k.launch("cross_entropy_grad_"+suf, Linear(rows*cols), k.Ptr(dlogits), k.Ptr(dloss), k.Ptr(logits), k.Ptr(lse), k.Ptr(target),
		I64(int64(rows)), I64(int64(cols)), I64(int64(ignore)), F64(smoothing))
}
