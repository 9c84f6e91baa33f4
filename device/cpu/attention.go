package cpu

import "github.com/headroom-ml/headroom/device"

func (kern) Dropout(dst, src device.Operand, p float64, seed, offset uint64) {
	panic("cpu: Dropout not implemented yet")
}
func (kern) Attention(out, lse, q, k, v device.Operand, b, h, t, d int, scale float64, causal bool) {
	panic("cpu: Attention not implemented yet")
}
func (kern) AttentionGrad(dq, dk, dv, dout, q, k, v, out, lse device.Operand, b, h, t, d int, scale float64, causal bool) {
	panic("cpu: AttentionGrad not implemented yet")
}
