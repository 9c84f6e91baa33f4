package cuda

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// bnLaunch is the launch of a batch-norm kernel (kernels/batchnorm.cu): a
// block per channel (at most rowBlocks, striding over the channels), a
// thread per value of the channel rounded up to whole warps, at most
// rowThreads.
func bnLaunch(n, c, hw int) Launch { return rowsLaunch(c, n*hw) }

// bnDense checks that the (n, c, hw) operands are dense and hold n·c·hw
// elements (nil-Block operands are skipped).
func (k *kern) bnDense(op string, size int, os ...device.Operand) {
	for _, o := range os {
		if o.Nil() {
			continue
		}
		if !o.Contiguous() || o.Len() != size {
			k.bad(op, "operand %v (strides %v): want a dense operand of %d elements", o.Shape, o.Strides, size)
		}
	}
}

// bnChannel checks the per-channel operands (nil-Block ones skipped): c
// elements, dense, of a float dtype that is F64 exactly when dt is, and
// returns their dtype-code arguments (pointer, code) in order.
func (k *kern) bnChannel(op string, dt dtype.DType, c int, os ...device.Operand) []Arg {
	args := make([]Arg, 0, 2*len(os))
	for _, o := range os {
		if !o.Nil() {
			if !o.DType.IsFloat() || (o.DType == dtype.F64) != (dt == dtype.F64) {
				k.bad(op, "per-channel operand of dtype %s for %s input: want a float dtype (F64 only with F64)", o.DType, dt)
			}
			if !o.Contiguous() || o.Len() != c {
				k.bad(op, "per-channel operand %v (strides %v): want (%d), dense", o.Shape, o.Strides, c)
			}
		}
		args = append(args, k.Ptr(o), Int(int(o.DType)))
	}
	return args
}

// bnStats checks mean and invstd: present, (c), of the compute dtype of dt.
func (k *kern) bnStats(op string, dt dtype.DType, c int, os ...device.Operand) {
	want := computeDType(dt)
	for _, o := range os {
		switch {
		case o.Nil():
			k.bad(op, "mean or invstd without a block: want (%d) %s", c, want)
		case o.DType != want:
			k.bad(op, "statistics of dtype %s for %s input: want %s", o.DType, dt, want)
		case !o.Contiguous() || o.Len() != c:
			k.bad(op, "statistics %v (strides %v): want (%d), dense", o.Shape, o.Strides, c)
		}
	}
}

// BatchNorm runs batchnorm_T (kernels/batchnorm.cu).
func (k *kern) BatchNorm(y, mean, invstd, x, w, b, runMean, runVar device.Operand, n, c, hw int, training bool, momentum, eps float64) {
	k.batchNorm("BatchNorm", y, mean, invstd, x, w, b, runMean, runVar, n, c, hw, training, false, momentum, eps)
}

// BatchNormRelu runs batchnorm_T with its ReLU flag set.
func (k *kern) BatchNormRelu(y, mean, invstd, x, w, b, runMean, runVar device.Operand, n, c, hw int, training bool, momentum, eps float64) {
	k.batchNorm("BatchNormRelu", y, mean, invstd, x, w, b, runMean, runVar, n, c, hw, training, true, momentum, eps)
}

// batchNorm checks BatchNorm's (or BatchNormRelu's) operands and launches
// batchnorm_T.
func (k *kern) batchNorm(op string, y, mean, invstd, x, w, b, runMean, runVar device.Operand, n, c, hw int, training, relu bool, momentum, eps float64) {
	dt := k.sameFloat(op, y, x)
	if x.Nil() || y.Nil() {
		k.bad(op, "x or y without a block")
	}
	k.bnDense(op, n*c*hw, y, x)
	k.bnStats(op, dt, c, mean, invstd)
	if !training && (runMean.Nil() || runVar.Nil()) {
		k.bad(op, "eval without running mean and running var")
	}
	ch := k.bnChannel(op, dt, c, w, b, runMean, runVar)
	if n*c*hw == 0 {
		return
	}
	args := append([]Arg{k.Ptr(y), k.Ptr(mean), k.Ptr(invstd), k.Ptr(x)}, ch...)
	args = append(args, I64(int64(n)), I64(int64(c)), I64(int64(hw)), Int(b2i(training)), F64(momentum), F64(eps), Int(b2i(relu)))
	k.launch("batchnorm_"+Suffix(dt), bnLaunch(n, c, hw), args...)
}

// BatchNormGrad runs batchnorm_grad_T (kernels/batchnorm.cu) for dx and,
// when non-nil, dw and db.
func (k *kern) BatchNormGrad(dx, dw, db, dy, x, w, mean, invstd device.Operand, n, c, hw int, training bool) {
	const op = "BatchNormGrad"
	dt := k.sameFloat(op, dy, dx, x)
	if dy.Nil() {
		k.bad(op, "dy without a block")
	}
	if x.Nil() && (training || !dw.Nil()) {
		k.bad(op, "no x: it is needed in training and for dw")
	}
	k.bnDense(op, n*c*hw, dx, dy, x)
	k.bnStats(op, dt, c, mean, invstd)
	dwb := k.bnChannel(op, dt, c, dw, db)
	wa := k.bnChannel(op, dt, c, w)
	if dx.Nil() && dw.Nil() && db.Nil() || c == 0 {
		return
	}
	args := append([]Arg{k.Ptr(dx)}, dwb...)
	args = append(args, k.Ptr(dy), k.Ptr(x))
	args = append(args, wa...)
	args = append(args, k.Ptr(mean), k.Ptr(invstd), I64(int64(n)), I64(int64(c)), I64(int64(hw)), Int(b2i(training)))
	k.launch("batchnorm_grad_"+Suffix(dt), bnLaunch(n, c, hw), args...)
}
