package kernels

import "math"

// attnBlock is the number of keys whose scores are computed before the
// running maximum is updated: one rescale of the accumulator per block
// rather than per key.
const attnBlock = 64

// Attention computes scaled-dot-product attention for contiguous q, k, v
// (b·h heads of (t, d) each): out_i = Σ_j softmax_j(scale·q_i·k_j)·v_j and
// lse_i = log Σ_j exp(scale·q_i·k_j), with j ≤ i when causal.
//
// Each query row's softmax is computed online, FlashAttention style: a
// running maximum m and sum l of exp(s−m) over blocks of keys, the output
// accumulator rescaled by exp(m_old−m_new) whenever the maximum grows. The
// t×t score matrix never exists; the kernel's own memory is d+64 float64s
// (the accumulator and one block of scores), all accumulation is float64.
func Attention[T Float](out []T, lse []float32, q, k, v []T, b, h, t, d int, scale float64, causal bool) {
	acc := make([]float64, d)
	var s [attnBlock]float64
	for bh := range b * h {
		base := bh * t * d
		for i := range t {
			qi := q[base+i*d:][:d]
			n := t
			if causal {
				n = i + 1
			}
			m, l := math.Inf(-1), 0.0
			clear(acc)
			for j0 := 0; j0 < n; j0 += attnBlock {
				j1 := min(j0+attnBlock, n)
				bm := math.Inf(-1)
				for j := j0; j < j1; j++ {
					sc := scale * attnDot(qi, k[base+j*d:][:d])
					s[j-j0] = sc
					bm = math.Max(bm, sc)
				}
				if bm > m {
					c := math.Exp(m - bm) // 0 for the first block
					l *= c
					for x := range acc {
						acc[x] *= c
					}
					m = bm
				}
				for j := j0; j < j1; j++ {
					p := math.Exp(s[j-j0] - m)
					l += p
					for x, vv := range v[base+j*d:][:d] {
						acc[x] += p * float64(vv)
					}
				}
			}
			o := out[base+i*d:][:d]
			for x := range o {
				o[x] = T(acc[x] / l)
			}
			lse[bh*t+i] = float32(m + math.Log(l))
		}
	}
}

// AttentionGrad writes dq, dk, dv (each like q) from dout, recomputing each
// probability p_ij = exp(scale·q_i·k_j − lse_i) from q, k and the forward's
// lse, FlashAttention-2 style:
//
//	δ_i = dout_i·out_i
//	ds_ij = p_ij·(dout_i·v_j − δ_i)
//	dv_j = Σ_i p_ij·dout_i, dk_j = scale·Σ_i ds_ij·q_i, dq_i = scale·Σ_j ds_ij·k_j
//
// It makes two passes over the (i, j) pairs of each head, one per key j
// (dk_j, dv_j) and one per query i (dq_i), so that every gradient row is
// summed in float64 registers and written once: no atomic or scratch
// accumulation, and each pass parallelises over rows. The kernel's own
// memory is t+3d float64s.
func AttentionGrad[T Float](dq, dk, dv, dout, q, k, v, out []T, lse []float32, b, h, t, d int, scale float64, causal bool) {
	delta := make([]float64, t)
	ak := make([]float64, d)
	av := make([]float64, d)
	aq := make([]float64, d)
	for bh := range b * h {
		base := bh * t * d
		row := func(s []T, i int) []T { return s[base+i*d:][:d] }
		ls := lse[bh*t:][:t]
		for i := range t {
			delta[i] = attnDot(row(dout, i), row(out, i))
		}
		// Pass 1: for each key j, the queries that see it.
		for j := range t {
			kj, vj := row(k, j), row(v, j)
			clear(ak)
			clear(av)
			i0 := 0
			if causal {
				i0 = j
			}
			for i := i0; i < t; i++ {
				qi, gi := row(q, i), row(dout, i)
				p := math.Exp(scale*attnDot(qi, kj) - float64(ls[i]))
				ds := p * (attnDot(gi, vj) - delta[i])
				for x := range d {
					av[x] += p * float64(gi[x])
					ak[x] += ds * float64(qi[x])
				}
			}
			gk, gv := row(dk, j), row(dv, j)
			for x := range d {
				gk[x] = T(scale * ak[x])
				gv[x] = T(av[x])
			}
		}
		// Pass 2: for each query i, the keys it sees.
		for i := range t {
			qi, gi := row(q, i), row(dout, i)
			clear(aq)
			n := t
			if causal {
				n = i + 1
			}
			for j := range n {
				kj := row(k, j)
				p := math.Exp(scale*attnDot(qi, kj) - float64(ls[i]))
				ds := p * (attnDot(gi, row(v, j)) - delta[i])
				for x := range d {
					aq[x] += ds * float64(kj[x])
				}
			}
			gq := row(dq, i)
			for x := range d {
				gq[x] = T(scale * aq[x])
			}
		}
	}
}

// attnDot returns Σ a_i·b_i accumulated in float64.
func attnDot[T Float](a, b []T) float64 {
	var s float64
	for i, x := range a {
		s += float64(x) * float64(b[i])
	}
	return s
}
