package cuda

// Temporary placeholders for the Kernels methods that h3 and h4 implement
// in their own files of this package (h3: elementwise.go, reduce.go,
// optim.go, dropout.go; h4: softmax.go, norm.go, loss.go, index.go,
// attention.go). h3 and h4: when you merge h1, delete your methods from
// this file (and the file when it is empty). h3's are gone (merged). Each raises a
// *device.KernelError wrapping ErrUnsupported.

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
)

// pending raises the error of a method whose kernels have not landed.
func (k *kern) pending(op string) {
	k.g.raise(op, fmt.Errorf("%w: %s: kernel adapter not merged yet", ErrUnsupported, op))
}

// h4
func (k *kern) Softmax(dst, src device.Operand, rows, cols int, log bool) { k.pending("Softmax") }
func (k *kern) SoftmaxGrad(dx, dy, y device.Operand, rows, cols int, log bool) {
	k.pending("SoftmaxGrad")
}
func (k *kern) LayerNorm(y, mean, rstd, x, w, b device.Operand, rows, cols int, eps float64) {
	k.pending("LayerNorm")
}
func (k *kern) LayerNormGrad(dx, dw, db, dy, x, w, mean, rstd device.Operand, rows, cols int) {
	k.pending("LayerNormGrad")
}
func (k *kern) CrossEntropy(loss, lse, logits, target device.Operand, rows, cols, ignore int, smoothing float64) {
	k.pending("CrossEntropy")
}
func (k *kern) CrossEntropyGrad(dlogits, dloss, logits, lse, target device.Operand, rows, cols, ignore int, smoothing float64) {
	k.pending("CrossEntropyGrad")
}
func (k *kern) IndexSelect(dst, src, idx device.Operand, outer, n, inner int) {
	k.pending("IndexSelect")
}
func (k *kern) IndexAdd(dst, idx, src device.Operand, outer, n, inner int)  { k.pending("IndexAdd") }
func (k *kern) Gather(dst, src, idx device.Operand, outer, n, m, inner int) { k.pending("Gather") }
func (k *kern) ScatterAdd(dst, idx, src device.Operand, outer, n, m, inner int) {
	k.pending("ScatterAdd")
}
func (k *kern) Attention(out, lse, q, kk, v device.Operand, b, h, t, d int, scale float64, causal bool) {
	k.pending("Attention")
}
func (k *kern) AttentionGrad(dq, dk, dv, dout, q, kk, v, out, lse device.Operand, b, h, t, d int, scale float64, causal bool) {
	k.pending("AttentionGrad")
}
