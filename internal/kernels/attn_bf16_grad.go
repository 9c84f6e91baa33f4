package kernels

// grad is AttentionGradHalf for bfloat16 (see attn_bf16.go): a head is a
// unit of work, as in AttentionGrad; its dq, dk and dv accumulate in the
// worker's float32 heads and are narrowed (dq and dk times scale) at the
// end.
func (a attnBF16) grad(dq, dk, dv, dout, q, k, v, out []uint16, lse []float32, b, h, t, d int, causal bool) {
	hd := t * d
	attnFor(b*h, b*h*t*t*d, func(lo, hi int) {
		sc := attnScratches.get()
		defer attnScratches.put(sc)
		hb := attnHalfBufs.get()
		defer attnHalfBufs.put(hb)
		s := scratchView[float32](&sc.s, attnBQ*attnBK)
		p := scratchView[float32](&sc.p, attnBQ*attnBK)
		t16 := scratchView[uint16](&sc.acc, 2*attnBQ*attnBK)
		delta := scratchView[float64](&sc.row, t)
		all := scratchView[float32](&hb.b, 3*hd+2*d)
		g := attnGradHeads{dq: all[:hd], dk: all[hd : 2*hd], dv: all[2*hd : 3*hd]}
		rows := all[3*hd:]
		for bh := lo; bh < hi; bh++ {
			o := bh * hd
			attnDeltaBF16(delta, dout[o:o+hd], out[o:o+hd], rows[:d], rows[d:], t, d)
			a.backwardHead(g, dout, q, k, v, lse[bh*t:(bh+1)*t], s, p, t16, delta, o, t, d, causal)
			g.narrow(dq[o:o+hd], dk[o:o+hd], dv[o:o+hd], a.scale)
		}
	})
}

// attnGradHeads are a worker's float32 gradient heads (t·d each).
type attnGradHeads struct{ dq, dk, dv []float32 }

// narrow writes the bfloat16 gradients: dq and dk times scale, dv as is.
func (g attnGradHeads) narrow(dq, dk, dv []uint16, scale float32) {
	scalePart(g.dq, g.dq, scale, false)
	scalePart(g.dk, g.dk, scale, false)
	f32ToBF16(dq, g.dq)
	f32ToBF16(dk, g.dk)
	f32ToBF16(dv, g.dv)
}

// attnDeltaBF16 sets delta[i] = dout_i·out_i over the t rows of one head
// (rows of d), each row pair widened into wa and wb (d each) and summed
// as attnDot sums float32.
func attnDeltaBF16(delta []float64, dout, out []uint16, wa, wb []float32, t, d int) {
	for i := range t {
		bf16ToF32(wa, dout[i*d:(i+1)*d])
		bf16ToF32(wb, out[i*d:(i+1)*d])
		delta[i] = dot32(wa, wb)
	}
}

// backwardHead accumulates the gradients of the head at element offset
// base into g, as attnBackwardHead with bfloat16 operands and the scale
// left out of dq and dk (g.narrow applies it): t16 holds the bfloat16 P
// and dS tiles.
func (a attnBF16) backwardHead(g attnGradHeads, dout, q, k, v []uint16, ls, s, p []float32, t16 []uint16, delta []float64, base, t, d int, causal bool) {
	p16, ds16 := t16[:attnBQ*attnBK], t16[attnBQ*attnBK:]
	attnTilePairs(t, causal, func(j0, nb, i0, mq int, first, betaQ float64) {
		a.probTile(s, p16, q, k, ls[i0:i0+mq], base, i0, j0, mq, nb, d, causal)
		// dV_j += bf16(P)ᵀ·dO_i.
		a.gemm(GemmArgs{TransA: true, M: nb, N: d, K: mq, Beta: first,
			OffB: base + i0*d, OffC: j0 * d, LdA: attnBK, LdB: d, LdC: d}, p16, dout, g.dv)
		// dP = dO_i·V_jᵀ in p, dS = P∘(dP − δ_i) in place, narrowed.
		a.gemm(GemmArgs{TransB: true, M: mq, N: nb, K: d,
			OffA: base + i0*d, OffB: base + j0*d, LdA: d, LdB: d, LdC: attnBK}, dout, v, p)
		attnDSTile(p, s, attnBK, mq, nb, delta[i0:i0+mq])
		attnNarrowTile(ds16, p, attnBK, mq, nb)
		// dQ_i += bf16(dS)·K_j (the first key block writes it).
		a.gemm(GemmArgs{M: mq, N: d, K: nb, Beta: betaQ,
			OffB: base + j0*d, OffC: i0 * d, LdA: attnBK, LdB: d, LdC: d}, ds16, k, g.dq)
		// dK_j += bf16(dS)ᵀ·Q_i.
		a.gemm(GemmArgs{TransA: true, M: nb, N: d, K: mq, Beta: first,
			OffB: base + i0*d, OffC: j0 * d, LdA: attnBK, LdB: d, LdC: d}, ds16, q, g.dk)
	})
}

// probTile sets the float32 tile s to P = exp(scale·Q_i·K_jᵀ − lse_i) (0
// for masked keys) and p16 to P rounded to bfloat16.
func (a attnBF16) probTile(s []float32, p16, q, k []uint16, ls []float32, base, i0, j0, mq, nb, d int, causal bool) {
	a.gemm(GemmArgs{TransB: true, M: mq, N: nb, K: d,
		OffA: base + i0*d, OffB: base + j0*d, LdA: d, LdB: d, LdC: attnBK}, q, k, s)
	attnScaleTile(s, attnBK, mq, nb, a.scale)
	attnProbTile(s, attnBK, i0, j0, mq, nb, causal, ls)
	attnNarrowTile(p16, s, attnBK, mq, nb)
}
