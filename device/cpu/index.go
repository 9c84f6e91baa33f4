package cpu

import "github.com/headroom-ml/headroom/device"

func (kern) IndexSelect(dst, src, idx device.Operand, outer, n, inner int) {
	panic("cpu: IndexSelect not implemented yet")
}
func (kern) IndexAdd(dst, idx, src device.Operand, outer, n, inner int) {
	panic("cpu: IndexAdd not implemented yet")
}
func (kern) Gather(dst, src, idx device.Operand, outer, n, m, inner int) {
	panic("cpu: Gather not implemented yet")
}
func (kern) ScatterAdd(dst, idx, src device.Operand, outer, n, m, inner int) {
	panic("cpu: ScatterAdd not implemented yet")
}
