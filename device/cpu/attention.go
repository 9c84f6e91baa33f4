package cpu

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

func (kern) Dropout(dst, src device.Operand, p float64, seed, offset uint64) {
	if wide(dst) {
		d := f64(dst)
		kernels.Dropout(d, lay(dst), f64(src), lay(src), p, seed, offset)
		put64(dst, d)
		return
	}
	d := f32(dst)
	kernels.Dropout(d, lay(dst), f32(src), lay(src), p, seed, offset)
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
		o := f64(out)
		kernels.Attention(span(o, out), span(f64(lse), lse), span(f64(q), q), span(f64(k), k), span(f64(v), v), b, h, t, d, scale, causal)
		put64(out, o)
		return
	}
	o := f32(out)
	kernels.Attention(span(o, out), span(f32(lse), lse), span(f32(q), q), span(f32(k), k), span(f32(v), v), b, h, t, d, scale, causal)
	put32(out, o)
}

func (kern) AttentionGrad(dq, dk, dv, dout, q, k, v, out, lse device.Operand, b, h, t, d int, scale float64, causal bool) {
	attnLSE(lse, q)
	if wide(dq) {
		gq, gk, gv := f64(dq), f64(dk), f64(dv)
		kernels.AttentionGrad(span(gq, dq), span(gk, dk), span(gv, dv),
			span(f64(dout), dout), span(f64(q), q), span(f64(k), k), span(f64(v), v), span(f64(out), out),
			span(f64(lse), lse), b, h, t, d, scale, causal)
		put64(dq, gq)
		put64(dk, gk)
		put64(dv, gv)
		return
	}
	gq, gk, gv := f32(dq), f32(dk), f32(dv)
	kernels.AttentionGrad(span(gq, dq), span(gk, dk), span(gv, dv),
		span(f32(dout), dout), span(f32(q), q), span(f32(k), k), span(f32(v), v), span(f32(out), out),
		span(f32(lse), lse), b, h, t, d, scale, causal)
	put32(dq, gq)
	put32(dk, gk)
	put32(dv, gv)
}
