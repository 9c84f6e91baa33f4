package cpu

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// attnHalf reports whether an attention call takes the 16-bit kernels
// (kernels.AttentionHalf, AttentionGradHalf: a head at a time widened in
// per-worker scratch): all of ops dense, of one 16-bit dtype and length,
// an F32 lse and a head of at most kernels.AttnHalfHeadElems.
func attnHalf(lse device.Operand, t, d int, ops ...device.Operand) bool {
	return inRegister && t*d <= kernels.AttnHalfHeadElems && lse.DType == dtype.F32 && lse.Contiguous() && sameHalf(ops...)
}

// attentionHalf is Attention through kernels.AttentionHalf.
func attentionHalf(out, lse, q, k, v device.Operand, b, h, t, d int, scale float64, causal bool) bool {
	if !attnHalf(lse, t, d, out, q, k, v) {
		return false
	}
	kernels.AttentionHalf(half(out), s32(lse), half(q), half(k), half(v), q.DType == dtype.BF16, b, h, t, d, scale, causal)
	return true
}

// attentionGradHalf is AttentionGrad through kernels.AttentionGradHalf.
func attentionGradHalf(dq, dk, dv, dout, q, k, v, out, lse device.Operand, b, h, t, d int, scale float64, causal bool) bool {
	if !attnHalf(lse, t, d, dq, dk, dv, dout, q, k, v, out) {
		return false
	}
	kernels.AttentionGradHalf(half(dq), half(dk), half(dv), half(dout), half(q), half(k), half(v), half(out),
		s32(lse), q.DType == dtype.BF16, b, h, t, d, scale, causal)
	return true
}
