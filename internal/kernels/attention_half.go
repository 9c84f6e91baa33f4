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
// Attention's on the widened head, so out and lse have the bits of
// Attention on the widened operands (out narrowed after). t·d must be at
// most AttnHalfHeadElems.
func AttentionHalf(out []uint16, lse []float32, q, k, v []uint16, bf16 bool, b, h, t, d int, scale float64, causal bool) {
	if b*h*t*d == 0 {
		return
	}
	attnHalfCheck(t, d)
	widen, narrow := halfWiden(bf16), halfNarrow(bf16)
	hd := t * d
	attnFor(b*h, b*h*t*t*d, func(lo, hi int) {
		sc := attnScratches.get()
		defer attnScratches.put(sc)
		hb := attnHalfBufs.get()
		defer attnHalfBufs.put(hb)
		x := scratchView[float32](&hb.b, 4*hd)
		hq, hk, hv, ho := x[:hd], x[hd:2*hd], x[2*hd:3*hd], x[3*hd:]
		s := scratchView[float32](&sc.s, attnFQ*attnFK)
		acc := scratchView[float32](&sc.acc, attnFQ*d)
		st := scratchView[float64](&sc.row, 2*attnFQ)
		for bh := lo; bh < hi; bh++ {
			o := bh * hd
			widen(hq, q[o:o+hd])
			widen(hk, k[o:o+hd])
			widen(hv, v[o:o+hd])
			ls := lse[bh*t : (bh+1)*t]
			for i0 := 0; i0 < t; i0 += attnFQ {
				attnForwardBlock(ho, ls, hq, hk, hv, s, acc, st, 0, i0, t, d, scale, causal)
			}
			narrow(out[o:o+hd], ho)
		}
	})
}

// AttentionGradHalf is AttentionGrad for 16-bit dq, dk, dv, dout, q, k, v
// and out with float32 lse, a head at a time in per-worker scratch as
// AttentionHalf: the head's dout, q, k, v and out widened, its gradients
// computed in float32 by AttentionGrad's head loop and narrowed. The bits
// are those of AttentionGrad on the widened operands (gradients narrowed
// after). t·d must be at most AttnHalfHeadElems.
func AttentionGradHalf(dq, dk, dv, dout, q, k, v, out []uint16, lse []float32, bf16 bool, b, h, t, d int, scale float64, causal bool) {
	if b*h*t*d == 0 {
		return
	}
	attnHalfCheck(t, d)
	widen, narrow := halfWiden(bf16), halfNarrow(bf16)
	hd := t * d
	attnFor(b*h, b*h*t*t*d, func(lo, hi int) {
		sc := attnScratches.get()
		defer attnScratches.put(sc)
		hb := attnHalfBufs.get()
		defer attnHalfBufs.put(hb)
		x := scratchView[float32](&hb.b, 8*hd)
		var heads [8][]float32 // dq, dk, dv, dout, q, k, v, out
		for i := range heads {
			heads[i] = x[i*hd : (i+1)*hd]
		}
		s := scratchView[float32](&sc.s, attnBQ*attnBK)
		p := scratchView[float32](&sc.p, attnBQ*attnBK)
		delta := scratchView[float64](&sc.row, t)
		for bh := lo; bh < hi; bh++ {
			o := bh * hd
			for i, src := range [4][]uint16{dout, q, k, v} {
				widen(heads[3+i], src[o:o+hd])
			}
			widen(heads[7], out[o:o+hd])
			attnBackwardHead(heads[0], heads[1], heads[2], heads[3], heads[4], heads[5], heads[6], heads[7],
				lse[bh*t:(bh+1)*t], s, p, delta, 0, t, d, scale, causal)
			for i, dst := range [3][]uint16{dq, dk, dv} {
				narrow(dst[o:o+hd], heads[i])
			}
		}
	})
}
