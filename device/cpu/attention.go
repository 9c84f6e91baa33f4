package cpu

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

func (kern) Dropout(dst, src device.Operand, p float64, seed, offset uint64) {
	if wide(dst) {
		d, dl := f64(dst)
		x, xl := f64(src)
		kernels.Dropout(d, lay(dl), x, lay(xl), p, seed, offset)
		put64(dst, d)
		return
	}
	d, dl := f32(dst)
	x, xl := f32(src)
	kernels.Dropout(d, lay(dl), x, lay(xl), p, seed, offset)
	put32(dst, d)
}

// attnLSE checks that the log-sum-exp operand has the compute dtype of
// the attention's inputs: F64 for F64, F32 for F32, F16 and BF16.
func attnLSE(lse, in device.Operand) {
	want := dtype.F32
	if wide(in) {
		want = dtype.F64
	}
	if lse.DType != want {
		panic(fmt.Sprintf("cpu: attention lse has dtype %s for %s inputs, want %s", lse.DType, in.DType, want))
	}
}

func (kern) Attention(out, lse, q, k, v device.Operand, b, h, t, d int, scale float64, causal bool) {
	attnLSE(lse, q)
	if wide(out) {
		o := s64(out)
		kernels.Attention(o, s64(lse), s64(q), s64(k), s64(v), b, h, t, d, scale, causal)
		put64(out, o)
		return
	}
	if attentionHalf(out, lse, q, k, v, b, h, t, d, scale, causal) {
		return
	}
	o := s32(out)
	if q.DType.IsLowPrecision() {
		kernels.AttentionWidened(o, s32(lse), s32(q), s32(k), s32(v), q.DType == dtype.BF16, b, h, t, d, scale, causal)
	} else {
		kernels.Attention(o, s32(lse), s32(q), s32(k), s32(v), b, h, t, d, scale, causal)
	}
	put32(out, o)
}

func (kern) AttentionGrad(dq, dk, dv, dout, q, k, v, out, lse device.Operand, b, h, t, d int, scale float64, causal bool) {
	attnLSE(lse, q)
	if wide(dq) {
		gq, gk, gv := s64(dq), s64(dk), s64(dv)
		kernels.AttentionGrad(gq, gk, gv,
			s64(dout), s64(q), s64(k), s64(v), s64(out),
			s64(lse), b, h, t, d, scale, causal)
		put64(dq, gq)
		put64(dk, gk)
		put64(dv, gv)
		return
	}
	if attentionGradHalf(dq, dk, dv, dout, q, k, v, out, lse, b, h, t, d, scale, causal) {
		return
	}
	gq, gk, gv := s32(dq), s32(dk), s32(dv)
	if q.DType.IsLowPrecision() {
		kernels.AttentionGradWidened(gq, gk, gv, s32(dout), s32(q), s32(k), s32(v), s32(out),
			s32(lse), q.DType == dtype.BF16, b, h, t, d, scale, causal)
	} else {
		kernels.AttentionGrad(gq, gk, gv, s32(dout), s32(q), s32(k), s32(v), s32(out),
			s32(lse), b, h, t, d, scale, causal)
	}
	put32(dq, gq)
	put32(dk, gk)
	put32(dv, gv)
}
