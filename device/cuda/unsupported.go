package cuda

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
)

// The quantization kernels of issue #15 (package quant's int8 path) are
// not on cuda yet: each raises a *device.KernelError
// wrapping ErrUnsupported, which autograd returns as an error.

// unsupported raises the error of an op that is not on cuda yet.
func (k *kern) unsupported(op string) {
	k.g.raise(op, fmt.Errorf("%w: %s: not yet on cuda (issue #15)", ErrUnsupported, op))
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
