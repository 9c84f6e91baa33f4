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

// lse32 returns the F32 log-sum-exp operand's elements.
func lse32(o device.Operand) []float32 {
	if o.DType != dtype.F32 {
		panic(fmt.Sprintf("cpu: attention lse has dtype %s, want f32", o.DType))
	}
	return span(dtype.AsF32(o.Block.Bytes()), o)
}

func (kern) Attention(out, lse, q, k, v device.Operand, b, h, t, d int, scale float64, causal bool) {
	l := lse32(lse)
	if wide(out) {
		o := f64(out)
		kernels.Attention(span(o, out), l, span(f64(q), q), span(f64(k), k), span(f64(v), v), b, h, t, d, scale, causal)
		put64(out, o)
		return
	}
	o := f32(out)
	kernels.Attention(span(o, out), l, span(f32(q), q), span(f32(k), k), span(f32(v), v), b, h, t, d, scale, causal)
	put32(out, o)
}

func (kern) AttentionGrad(dq, dk, dv, dout, q, k, v, out, lse device.Operand, b, h, t, d int, scale float64, causal bool) {
	l := lse32(lse)
	if wide(dq) {
		gq, gk, gv := f64(dq), f64(dk), f64(dv)
		kernels.AttentionGrad(span(gq, dq), span(gk, dk), span(gv, dv),
			span(f64(dout), dout), span(f64(q), q), span(f64(k), k), span(f64(v), v), span(f64(out), out),
			l, b, h, t, d, scale, causal)
		put64(dq, gq)
		put64(dk, gk)
		put64(dv, gv)
		return
	}
	gq, gk, gv := f32(dq), f32(dk), f32(dv)
	kernels.AttentionGrad(span(gq, dq), span(gk, dk), span(gv, dv),
		span(f32(dout), dout), span(f32(q), q), span(f32(k), k), span(f32(v), v), span(f32(out), out),
		l, b, h, t, d, scale, causal)
	put32(dq, gq)
	put32(dk, gk)
	put32(dv, gv)
}
