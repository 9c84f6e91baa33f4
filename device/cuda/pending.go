package cuda

// Temporary placeholders for the Kernels methods that h3 and h4 implement
// in their own files of this package (h3: elementwise.go, reduce.go,
// optim.go, dropout.go; h4: softmax.go, norm.go, loss.go, index.go,
// attention.go). h3 and h4: when you merge h1, delete your methods from
// this file (and the file when it is empty). Each raises a
// *device.KernelError wrapping ErrUnsupported.

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
)

// pending raises the error of a method whose kernels have not landed.
func (k *kern) pending(op string) {
	k.g.raise(op, fmt.Errorf("%w: %s: kernel adapter not merged yet", ErrUnsupported, op))
}

// h3
func (k *kern) Copy(dst, src device.Operand)                                  { k.pending("Copy") }
func (k *kern) Fill(dst device.Operand, v float64)                            { k.pending("Fill") }
func (k *kern) Unary(op device.UnaryOp, dst, src device.Operand, arg float64) { k.pending("Unary") }
func (k *kern) UnaryGrad(op device.UnaryOp, dx, dy, x, y device.Operand, arg float64) {
	k.pending("UnaryGrad")
}
func (k *kern) Binary(op device.BinaryOp, dst, a, b device.Operand)             { k.pending("Binary") }
func (k *kern) Axpy(alpha float64, x, y device.Operand)                         { k.pending("Axpy") }
func (k *kern) Where(dst, cond, a, b device.Operand)                            { k.pending("Where") }
func (k *kern) Reduce(op device.ReduceOp, dst, src device.Operand, arg float64) { k.pending("Reduce") }
func (k *kern) SumSquares(dst, src device.Operand)                              { k.pending("SumSquares") }
func (k *kern) AdamStep(p, g, m, v device.Operand, a device.AdamArgs)           { k.pending("AdamStep") }
func (k *kern) SGDStep(p, g, buf device.Operand, a device.SGDArgs)              { k.pending("SGDStep") }
func (k *kern) Dropout(dst, src device.Operand, p float64, seed, offset uint64) { k.pending("Dropout") }

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
