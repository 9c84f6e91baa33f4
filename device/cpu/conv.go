package cpu

import "github.com/headroom-ml/headroom/device"

func (kern) Conv2d(p device.Conv2d, y, x, w, ws device.Operand) {
	panic("cpu: Conv2d not implemented yet")
}
func (kern) Conv2dGradInput(p device.Conv2d, dx, dy, w, ws device.Operand) {
	panic("cpu: Conv2dGradInput not implemented yet")
}
func (kern) Conv2dGradWeight(p device.Conv2d, dw, dy, x, ws device.Operand) {
	panic("cpu: Conv2dGradWeight not implemented yet")
}
func (kern) MaxPool2d(p device.Pool2d, y, x device.Operand) {
	panic("cpu: MaxPool2d not implemented yet")
}
func (kern) MaxPool2dGrad(p device.Pool2d, dx, dy, x device.Operand) {
	panic("cpu: MaxPool2dGrad not implemented yet")
}
func (kern) AvgPool2d(p device.Pool2d, y, x device.Operand) {
	panic("cpu: AvgPool2d not implemented yet")
}
func (kern) AvgPool2dGrad(p device.Pool2d, dx, dy device.Operand) {
	panic("cpu: AvgPool2dGrad not implemented yet")
}
func (kern) AdaptiveAvgPool2d(y, x device.Operand, n, c, h, w, oh, ow int) {
	panic("cpu: AdaptiveAvgPool2d not implemented yet")
}
func (kern) AdaptiveAvgPool2dGrad(dx, dy device.Operand, n, c, h, w, oh, ow int) {
	panic("cpu: AdaptiveAvgPool2dGrad not implemented yet")
}
