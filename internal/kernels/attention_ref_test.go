package kernels

import "math"

// The scalar attention kernels that the tiled ones replaced (one query row
// at a time against one key at a time, float64 accumulation, one
// goroutine), kept as a second reference for the tests and as the
// "before" of BenchmarkAttention.

func attnScalarForward[T Float](out, lse, q, k, v []T, b, h, t, d int, scale float64, causal bool) {
	const blk = 64
	acc := make([]float64, d)
	var s [blk]float64
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
			for j0 := 0; j0 < n; j0 += blk {
				j1 := min(j0+blk, n)
				bm := math.Inf(-1)
				for j := j0; j < j1; j++ {
					sc := scale * attnDotSeq(qi, k[base+j*d:][:d])
					s[j-j0] = sc
					bm = math.Max(bm, sc)
				}
				if bm > m {
					c := math.Exp(m - bm)
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
			lse[bh*t+i] = T(m + math.Log(l))
		}
	}
}

func attnScalarBackward[T Float](dq, dk, dv, dout, q, k, v, out, lse []T, b, h, t, d int, scale float64, causal bool) {
	delta := make([]float64, t)
	ak := make([]float64, d)
	av := make([]float64, d)
	aq := make([]float64, d)
	for bh := range b * h {
		base := bh * t * d
		row := func(s []T, i int) []T { return s[base+i*d:][:d] }
		ls := lse[bh*t:][:t]
		for i := range t {
			delta[i] = attnDotSeq(row(dout, i), row(out, i))
		}
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
				p := math.Exp(scale*attnDotSeq(qi, kj) - float64(ls[i]))
				ds := p * (attnDotSeq(gi, vj) - delta[i])
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
		for i := range t {
			qi, gi := row(q, i), row(dout, i)
			clear(aq)
			n := t
			if causal {
				n = i + 1
			}
			for j := range n {
				kj := row(k, j)
				p := math.Exp(scale*attnDotSeq(qi, kj) - float64(ls[i]))
				ds := p * (attnDotSeq(gi, row(v, j)) - delta[i])
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

func attnDotSeq[T Float](a, b []T) float64 {
	var s float64
	for i, x := range a {
		s += float64(x) * float64(b[i])
	}
	return s
}
