package autograd

import "math"

// ScaledDotProductAttention returns softmax(q·kᵀ/√D + mask)·v for q, k and
// v (B, H, T, D) of one float dtype: the output has q's shape and dtype.
// With causal, query i attends to keys j ≤ i only (the mask is −∞ above the
// diagonal). Inputs that are not contiguous are copied first (those copies
// are then what is saved).
//
// It is one fused op: the kernel computes each query row's softmax online
// (a running maximum and sum over the keys) and never materialises the T×T
// score matrix; it stores the output and each row's log-sum-exp lse (B, H,
// T) in the compute dtype: F64 for F64 inputs (as the other fused ops keep
// F64 statistics, so F64 gradients are F64-accurate), F32 for F32, F16 and
// BF16. Backward recomputes the probabilities row by row from q, k and lse
// (FlashAttention-2 style) to produce dq, dk and dv.
//
// Saves q, k, v (already alive), the output (returned) and lse: beyond its
// inputs the op holds B·H·T·D·size + B·H·T·cs bytes, O(B·H·T·D), with size
// the inputs' element size and cs the compute dtype's (4, or 8 for F64).
// The composed softmax(q.MatMul(kᵀ)·scale)·v saves the probabilities,
// B·H·T²·size bytes (and briefly holds the scores, as many again): about
// T/(D+1) times the fused op's out + lse. In no-grad mode lse is freed
// before returning.
func ScaledDotProductAttention(q, k, v *Tensor, causal bool) *Tensor {
	const name = "scaled_dot_product_attention"
	o := begin(name, q, k, v)
	cast, rel := o.castLow(q, k, v)
	defer rel()
	q, k, v = cast[0], cast[1], cast[2]
	if len(q.shape) != 4 || !sameShape(q.shape, k.shape) || !sameShape(q.shape, v.shape) {
		fail(name, "q %v, k %v, v %v: want three (B, H, T, D) of one shape", q.shape, k.shape, v.shape)
	}
	o.exactDType(operand{"q", q}, operand{"k", k}, operand{"v", v})
	b, h, t, d := q.shape[0], q.shape[1], q.shape[2], q.shape[3]
	if d == 0 {
		fail(name, "q %v: head dimension D is 0", q.shape)
	}
	scale := 1 / math.Sqrt(float64(d))
	qc, fq := dense(q)
	kc, fk := dense(k)
	vc, fv := dense(v)
	out, lse := o.replayedPair(q.dt, q.shape, computeDType(q.dt), []int{b, h, t}) // kept by a recomputation
	if out == nil {
		out = o.empty(q.dt, q.shape)
		lse = o.empty(computeDType(q.dt), []int{b, h, t})
		if kk := o.k(); kk != nil {
			kk.Attention(out.operand(), lse.operand(), qc.operand(), kc.operand(), vc.operand(), b, h, t, d, scale, causal)
		}
		o.logged(out)
		o.logged(lse)
	}
	shape := q.shape
	o.grad([]*Tensor{out}, []*Tensor{q, k, v}, []*Tensor{qc, kc, vc, out, lse}, func(c *bctx) []*Tensor {
		g, fg := dense(c.g[0])
		defer fg()
		s := c.saved
		o := begin(name+"_backward", g, s[0], s[1], s[2], s[3], s[4])
		grads := []*Tensor{o.empty(g.dt, shape), o.empty(g.dt, shape), o.empty(g.dt, shape)}
		if kk := o.k(); kk != nil {
			kk.AttentionGrad(grads[0].operand(), grads[1].operand(), grads[2].operand(), g.operand(),
				s[0].operand(), s[1].operand(), s[2].operand(), s[3].operand(), s[4].operand(), b, h, t, d, scale, causal)
		}
		for i, need := range c.need {
			if !need {
				grads[i].Release()
				grads[i] = nil
			}
		}
		return grads
	})
	lse.Release()
	fq()
	fk()
	fv()
	return out
}
