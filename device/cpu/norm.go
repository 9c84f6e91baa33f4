package cpu

import "github.com/headroom-ml/headroom/device"

func (kern) Softmax(dst, src device.Operand, rows, cols int, log bool) {
	panic("cpu: Softmax not implemented yet")
}
func (kern) SoftmaxGrad(dx, dy, y device.Operand, rows, cols int, log bool) {
	panic("cpu: SoftmaxGrad not implemented yet")
}
func (kern) LayerNorm(y, mean, rstd, x, w, b device.Operand, rows, cols int, eps float64) {
	panic("cpu: LayerNorm not implemented yet")
}
func (kern) LayerNormGrad(dx, dw, db, dy, x, w, mean, rstd device.Operand, rows, cols int) {
	panic("cpu: LayerNormGrad not implemented yet")
}
func (kern) BatchNorm(y, mean, invstd, x, w, b, runMean, runVar device.Operand, n, c, hw int, training bool, momentum, eps float64) {
	panic("cpu: BatchNorm not implemented yet")
}
func (kern) BatchNormGrad(dx, dw, db, dy, x, w, mean, invstd device.Operand, n, c, hw int, training bool) {
	panic("cpu: BatchNormGrad not implemented yet")
}
func (kern) CrossEntropy(loss, lse, logits, target device.Operand, rows, cols, ignore int, smoothing float64) {
	panic("cpu: CrossEntropy not implemented yet")
}
func (kern) CrossEntropyGrad(dlogits, dloss, logits, lse, target device.Operand, rows, cols, ignore int, smoothing float64) {
	panic("cpu: CrossEntropyGrad not implemented yet")
}
