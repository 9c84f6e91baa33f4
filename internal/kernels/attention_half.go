package kernels

// AttnHalfHeadElems is the largest head (t·d elements) that AttentionHalf
// and AttentionGradHalf take: their per-worker scratch is 4 (forward) or
// 8 (backward) float32 heads, 1 MiB at most.
const AttnHalfHeadElems = 1 << 15

// attnHalfBufs holds the per-worker head scratch of the 16-bit attention.
var attnHalfBufs freeList[convBuf]

// attnHalfCheck panics unless a head fits AttnHalfHeadElems.
func attnHalfCheck(t, d int) {
	if t*d > AttnHalfHeadElems {
		panic("kernels: 16-bit attention head over AttnHalfHeadElems")
	}
}

// AttentionHalf is Attention for 16-bit q, k, v and out (bfloat16 when
// bf16, else float16) with float32 lse: each worker takes whole heads,
// widens the head's q, k and v into its scratch, computes its query blocks
// as Attention does in float32 and narrows the head's output, so no
// float32 copy of a whole operand exists. Each block's arithmetic is
// Attention's on the widened head except that the probabilities P are
// rounded to the 16-bit type before P·V (the row sums taken before, from
// the float32 P): PyTorch's flash-attention semantics for 16-bit
// operands, which the pair kernel and the cuda device's attention share.
// t·d must be at most AttnHalfHeadElems.
//
// bfloat16 on a CPU with AVX512_BF16 takes the pair kernel instead (see
// attn_bf16.go): q, k and v are read as bfloat16 by VDPBF16PS (TDPBF16PS
// on AMX for products of depth 32 or more) with float32 accumulation, no head is widened, and the results agree with
// the widened path to bfloat16 rounding, not bit for bit.
func AttentionHalf(out []uint16, lse []float32, q, k, v []uint16, bf16 bool, b, h, t, d int, scale float64, causal bool) {
	if a, ok := attnPairs(bf16, t, d, scale); ok && b*h > 0 {
		a.forward(out, lse, q, k, v, b, h, t, d, causal)
		return
	}
	attnWidenedForward(out, lse, q, k, v, bf16, b, h, t, d, scale, causal)
}

// attnWidenedForward is AttentionHalf on heads widened to float32.
func attnWidenedForward(out []uint16, lse []float32, q, k, v []uint16, bf16 bool, b, h, t, d int, scale float64, causal bool) {
	attnHalfHeads(bf16, b, h, t, d, [][]uint16{out}, [][]uint16{q, k, v}, func(sc *attnScratch, x [][]float32, bh int) {
		s := scratchView[float32](&sc.s, attnFQ*attnFK)
		acc := scratchView[float32](&sc.acc, attnFQ*d)
		st := scratchView[float64](&sc.row, 2*attnFQ)
		for i0 := 0; i0 < t; i0 += attnFQ {
			attnForwardBlock(x[0], lse[bh*t:(bh+1)*t], x[1], x[2], x[3], s, acc, st, 0, i0, t, d, scale, causal, attnHalfRound(bf16))
		}
	})
}

// AttentionGradHalf is AttentionGrad for 16-bit dq, dk, dv, dout, q, k, v
// and out with float32 lse, a head at a time in per-worker scratch as
// AttentionHalf: the head's dout, q, k, v and out widened, its gradients
// computed in float32 by AttentionGrad's head loop and narrowed, with P
// rounded to the 16-bit type before Pᵀ·dO and dS = P∘(dP − δ) (from the
// float32 P) rounded before dS·K and dSᵀ·Q, as in AttentionHalf. t·d must
// be at most AttnHalfHeadElems. bfloat16 on a CPU with
// AVX512_BF16 takes the pair kernel, as AttentionHalf does.
func AttentionGradHalf(dq, dk, dv, dout, q, k, v, out []uint16, lse []float32, bf16 bool, b, h, t, d int, scale float64, causal bool) {
	if a, ok := attnPairs(bf16, t, d, scale); ok && b*h > 0 {
		a.grad(dq, dk, dv, dout, q, k, v, out, lse, b, h, t, d, causal)
		return
	}
	attnWidenedGrad(dq, dk, dv, dout, q, k, v, out, lse, bf16, b, h, t, d, scale, causal)
}

// attnWidenedGrad is AttentionGradHalf on heads widened to float32.
func attnWidenedGrad(dq, dk, dv, dout, q, k, v, out []uint16, lse []float32, bf16 bool, b, h, t, d int, scale float64, causal bool) {
	attnHalfHeads(bf16, b, h, t, d, [][]uint16{dq, dk, dv}, [][]uint16{dout, q, k, v, out}, func(sc *attnScratch, x [][]float32, bh int) {
		s := scratchView[float32](&sc.s, attnBQ*attnBK)
		p := scratchView[float32](&sc.p, attnBQ*attnBK)
		delta := scratchView[float64](&sc.row, t)
		attnBackwardHead(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7],
			lse[bh*t:(bh+1)*t], s, p, delta, 0, t, d, scale, causal, attnHalfRound(bf16))
	})
}

// AttentionBF16Pairs reports whether bfloat16 AttentionHalf and
// AttentionGradHalf run on the VDPBF16PS pair kernel on this machine
// (AVX512_BF16, not a noasm build; with AMX-BF16 their products of depth
// 32 or more run on TDPBF16PS): their results then agree with Attention
// on the widened operands to bfloat16 rounding, not bit for bit.
func AttentionBF16Pairs() bool { return sbgemm != nil }

// attnPairs returns the pair-kernel attention for scale when the
// operands are bfloat16, the CPU has the pair kernel and the head is not
// empty (after attnHalfCheck), its deep products on the AMX kernel where
// the CPU has one.
func attnPairs(bf16 bool, t, d int, scale float64) (attnBF16, bool) {
	if !bf16 || sbgemm == nil || t*d == 0 {
		return attnBF16{}, false
	}
	attnHalfCheck(t, d)
	return attnBF16{kn: sbgemm, deep: amxgemm, scale: float32(scale)}, true
}

// attnHalfHeads runs the 16-bit attention head by head on the workers: for
// head bh it widens the head of each of ins into the worker's float32
// scratch, calls compute with the worker's attention scratch and the
// float32 heads (those of outs first, then those of ins), then narrows the
// heads of outs into place.
func attnHalfHeads(bf16 bool, b, h, t, d int, outs, ins [][]uint16, compute func(sc *attnScratch, x [][]float32, bh int)) {
	if b*h*t*d == 0 {
		return
	}
	attnHalfCheck(t, d)
	widen, narrow := halfWiden(bf16), halfNarrow(bf16)
	hd, n := t*d, len(outs)+len(ins)
	attnFor(b*h, b*h*t*t*d, func(lo, hi int) {
		sc := attnScratches.get()
		defer attnScratches.put(sc)
		hb := attnHalfBufs.get()
		defer attnHalfBufs.put(hb)
		all := scratchView[float32](&hb.b, n*hd)
		var x [8][]float32
		for i := range n {
			x[i] = all[i*hd : (i+1)*hd]
		}
		for bh := lo; bh < hi; bh++ {
			o := bh * hd
			for i, src := range ins {
				widen(x[len(outs)+i], src[o:o+hd])
			}
			compute(sc, x[:n], bh)
			for i, dst := range outs {
				narrow(dst[o:o+hd], x[i])
			}
		}
	})
}

// AttentionWidened is Attention on float32 copies of bfloat16 (bf16) or
// float16 operands with AttentionHalf's semantics: each probability tile
// rounded to the 16-bit type before P·V. It serves the callers that widen
// whole operands (heads over AttnHalfHeadElems, mixed layouts); its bits
// are those of AttentionHalf's widened path on the same values.
func AttentionWidened(out, lse, q, k, v []float32, bf16 bool, b, h, t, d int, scale float64, causal bool) {
	attnRun(out, lse, q, k, v, b, h, t, d, scale, causal, attnHalfRound(bf16))
}

// AttentionGradWidened is AttentionGrad on float32 copies of 16-bit
// operands with AttentionGradHalf's semantics (P and dS rounded to the
// 16-bit type before the products they enter), as AttentionWidened.
func AttentionGradWidened(dq, dk, dv, dout, q, k, v, out, lse []float32, bf16 bool, b, h, t, d int, scale float64, causal bool) {
	attnGradRun(dq, dk, dv, dout, q, k, v, out, lse, b, h, t, d, scale, causal, attnHalfRound(bf16))
}

// attnHalfRound returns the rounding of the 16-bit attention's P and dS
// tiles to bfloat16 (bf16) or float16, nearest even, a row at a time
// through a stack row: the operand type of the products they enter, as
// PyTorch's flash attention rounds them (and the pair kernel must).
func attnHalfRound(bf16 bool) attnTileRound[float32] {
	widen, narrow := halfWiden(bf16), halfNarrow(bf16)
	return func(s []float32, ld, rows, cols int) {
		var buf [max(attnFK, attnBK)]uint16
		for r := range rows {
			row := s[r*ld : r*ld+cols]
			narrow(buf[:cols], row)
			widen(row, buf[:cols])
		}
	}
}
