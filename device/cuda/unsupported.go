package cuda

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
)

// The Kernels methods of issue #15 (convolution, pooling, batch norm,
// quantization) are not on cuda yet: each raises a *device.KernelError
// wrapping ErrUnsupported, which autograd returns as an error.

// unsupported raises the error of an op that is not on cuda yet.
func (k *kern) unsupported(op string) {
	k.g.raise(op, fmt.Errorf("%w: %s: not yet on cuda (issue #15)", ErrUnsupported, op))
}

func (k *kern) BatchNorm(y, mean, invstd, x, w, b, runMean, runVar device.Operand, n, c, hw int, training bool, momentum, eps float64) {
	k.unsupported("batch_norm")
}
func (k *kern) BatchNormGrad(dx, dw, db, dy, x, w, mean, invstd device.Operand, n, c, hw int, training bool) {
	k.unsupported("batch_norm_grad")
}
func (k *kern) Conv2d(p device.Conv2d, y, x, w, ws device.Operand) { k.unsupported("conv2d") }
func (k *kern) Conv2dGradInput(p device.Conv2d, dx, dy, w, ws device.Operand) {
	k.unsupported("conv2d_grad_input")
}
func (k *kern) Conv2dGradWeight(p device.Conv2d, dw, dy, x, ws device.Operand) {
	k.unsupported("conv2d_grad_weight")
}
func (k *kern) QuantScales(dst, src device.Operand, rows int)         { k.unsupported("quant_scales") }
func (k *kern) Quantize(dst, src, scale device.Operand, rows int)     { k.unsupported("quantize") }
func (k *kern) FakeQuantize(dst, src, scale device.Operand, rows int) { k.unsupported("fake_quantize") }
func (k *kern) FakeQuantizeGrad(dx, dy, src, scale device.Operand, rows int) {
	k.unsupported("fake_quantize_grad")
}
func (k *kern) LinearI8(y, xq, wq, xscale, wscale, bias device.Operand, m, n, kk int) {
	k.unsupported("linear_i8")
}
func (k *kern) Conv2dI8(p device.Conv2d, y, xq, wq, xscale, wscale, bias, col, acc device.Operand, relu bool) {
	k.unsupported("conv2d_i8")
}
