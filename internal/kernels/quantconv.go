package kernels

import (
	"fmt"
	"math"
)

// Conv2dI8 computes a quantized convolution into float32:
//
//	y[n][k][p] = relu?( acc·(xscale·wscale[k]) + bias[k] )
//	acc        = Σ over (c, r, s) of xq[n][c][…]·wq[k][c][r][s]   (exact int32)
//
// for xq (N, C, H, W) and wq (K, C/G, R, S) int8, y (N, K, OH, OW) float32,
// bias nil or K values, each product rounded as in DequantI32 (no fused
// multiply-add). Samples are processed in chunks of chunk: for each chunk and
// group, the im2col matrix of the chunk's samples side by side,
// (C/G·R·S) × (chunk·OH·OW) int8, is built in col, one GemmI8
// (K/G × C/G·R·S) · col fills acc (K/G × chunk·OH·OW int32), and the
// epilogue writes y. col and acc hold at least ConvI8Workspace's sizes.
// The zero padding is the integer 0, exact for symmetric quantization.
func Conv2dI8(p ConvArgs, y []float32, xq, wq []int8, xscale float32, wscale, bias []float32, relu bool, chunk int, col []int8, acc []int32) {
	d := p.dims()
	cw, aw := p.I8Workspace(chunk)
	switch {
	case chunk <= 0 || len(col) < cw || len(acc) < aw:
		panic(fmt.Sprintf("kernels.Conv2dI8: chunk %d, workspaces %d and %d, want %d and %d", chunk, len(col), len(acc), cw, aw))
	case len(wscale) != p.K || (bias != nil && len(bias) != p.K):
		panic(fmt.Sprintf("kernels.Conv2dI8: %d weight scales and %d biases for %d filters", len(wscale), len(bias), p.K))
	case len(xq) < p.N*d.xs || len(y) < p.N*d.ys || len(wq) < p.Groups*d.wg:
		panic(fmt.Sprintf("kernels.Conv2dI8: slices x %d, y %d, w %d too short for %+v", len(xq), len(y), len(wq), p))
	}
	if d.crs > MaxI8K {
		panic(fmt.Sprintf("kernels.Conv2dI8: C/G·R·S = %d exceeds MaxI8K", d.crs))
	}
	for n0 := 0; n0 < p.N; n0 += chunk {
		cnt := min(chunk, p.N-n0)
		cols := cnt * d.ohw
		if cols == 0 {
			continue
		}
		for g := range p.Groups {
			ParallelFor(cnt, 1, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					xo := (n0+i)*d.xs + g*d.cg*d.hw
					im2colI8(p, col[i*d.ohw:], cols, xq[xo:xo+d.cg*d.hw], d.cg)
				}
			})
			GemmI8(d.kg, cols, d.crs, wq[g*d.wg:], d.crs, col, cols, acc, cols)
			ParallelFor(d.kg*cnt, max(1, quantGrain/d.ohw), func(lo, hi int) {
				for t := lo; t < hi; t++ {
					kk, i := t/cnt, t%cnt
					k := g*d.kg + kk
					out := y[(n0+i)*d.ys+k*d.ohw:][:d.ohw]
					in := acc[kk*cols+i*d.ohw:][:d.ohw]
					b := float32(0)
					if bias != nil {
						b = bias[k]
					}
					dequantBiasRow(out, in, xscale*wscale[k], b, relu)
				}
			})
		}
	}
}

// I8Workspace returns the int8 elements of Conv2dI8's im2col workspace and
// the int32 elements of its accumulator for chunks of chunk samples (at
// most N): (C/G·R·S)·(c·OH·OW) and (K/G)·(c·OH·OW) with c = min(chunk, N).
func (p ConvArgs) I8Workspace(chunk int) (col, acc int) {
	c := min(chunk, p.N)
	ohw := p.OH * p.OW
	return p.C / p.Groups * p.R * p.S * c * ohw, p.K / p.Groups * c * ohw
}

// dequantBiasRow writes out[j] = relu?(float32(in[j])·s + b), the product
// rounded before the addition; the ReLU gives +0 for a negative result, a
// −0 and a NaN (as VMAXPS with +0 does).
func dequantBiasRow(out []float32, in []int32, s, b float32, relu bool) {
	in = in[:len(out)]
	j := 0
	if CPU.AVX2FMA && len(out) >= 8 {
		j = len(out) &^ 7
		qDequantBiasAVX2(&out[0], &in[0], j, s, b, relu)
	}
	if !relu {
		for ; j < len(out); j++ {
			out[j] = float32(float32(in[j])*s) + b
		}
		return
	}
	for ; j < len(out); j++ {
		out[j] = relu32(float32(float32(in[j])*s) + b)
	}
}

// relu32 returns f when f > 0 and +0 otherwise (negatives, −0, NaN),
// without a branch: the bits are cleared when the sign is set or the
// magnitude's bits exceed +Inf's.
func relu32(f float32) float32 {
	u := math.Float32bits(f)
	a := int32(u &^ (1 << 31))
	m := uint32(int32(u)>>31) | uint32((0x7f800000-a)>>31)
	return math.Float32frombits(u &^ m)
}

// im2colI8 writes the (cg·R·S) × (OH·OW) im2col matrix of x (cg, H, W)
// into col with row stride ld: row (c, r, s), column (oh, ow) holds
// x[c, oh·sh−ph+r·dh, ow·sw−pw+s·dw], or 0 in the padding.
func im2colI8(p ConvArgs, col []int8, ld int, x []int8, cg int) {
	if p.StrideH == 1 && p.StrideW == 1 && p.OW == p.W {
		im2colI8Same(p, col, ld, x, cg)
		return
	}
	row := 0
	for c := range cg {
		plane := x[c*p.H*p.W : (c+1)*p.H*p.W]
		for r := range p.R {
			hoff := r*p.DilH - p.PadH
			hlo, hhi := convRange(hoff, p.StrideH, p.H, p.OH)
			for s := range p.S {
				woff := s*p.DilW - p.PadW
				wlo, whi := convRange(woff, p.StrideW, p.W, p.OW)
				dst := col[row*ld : row*ld+p.OH*p.OW]
				row++
				clear(dst[:hlo*p.OW])
				clear(dst[hhi*p.OW:])
				if wlo >= whi {
					clear(dst[hlo*p.OW : hhi*p.OW])
					continue
				}
				sw := p.StrideW
				for oh := hlo; oh < hhi; oh++ {
					out := dst[oh*p.OW : (oh+1)*p.OW]
					for i := range wlo { // a few columns: no clear call
						out[i] = 0
					}
					for i := whi; i < len(out); i++ {
						out[i] = 0
					}
					src := plane[(oh*p.StrideH+hoff)*p.W+wlo*sw+woff:]
					src = src[:(whi-wlo-1)*sw+1]
					o := out[wlo:whi]
					if sw == 1 {
						copy(o, src)
						continue
					}
					for i := range o {
						o[i] = src[i*sw]
					}
				}
			}
		}
	}
}

// im2colI8Same is im2colI8 for stride 1 with OW = W (the "same" padding
// of odd kernels, and unpadded 1×1): the rows of a window offset are then
// consecutive in x and in col, so each (c, r, s) row of col is one copy of
// its valid rows, after which the columns that fall in the padding are
// cleared.
func im2colI8Same(p ConvArgs, col []int8, ld int, x []int8, cg int) {
	hw, ohw := p.H*p.W, p.OH*p.OW
	row := 0
	for c := range cg {
		plane := x[c*hw : (c+1)*hw]
		for r := range p.R {
			hoff := r*p.DilH - p.PadH
			hlo, hhi := convRange(hoff, 1, p.H, p.OH)
			for s := range p.S {
				woff := s*p.DilW - p.PadW
				wlo, whi := convRange(woff, 1, p.W, p.OW)
				dst := col[row*ld : row*ld+ohw]
				row++
				clear(dst[:hlo*p.OW])
				clear(dst[hhi*p.OW:])
				if hlo >= hhi {
					continue
				}
				// dst[oh·OW + ow] = plane[(oh+hoff)·W + ow + woff]: one
				// shifted copy, clipped to the plane, for rows [hlo, hhi).
				lo, hi := hlo*p.OW, hhi*p.OW
				d := hoff*p.W + woff // source index minus destination index
				a, b := max(lo, -d), min(hi, hw-d)
				if a < b {
					copy(dst[a:b], plane[a+d:b+d])
				}
				if wlo == 0 && whi == p.OW {
					continue
				}
				for oh := hlo; oh < hhi; oh++ {
					out := dst[oh*p.OW : (oh+1)*p.OW]
					for i := range wlo { // a few columns: no clear call
						out[i] = 0
					}
					for i := whi; i < len(out); i++ {
						out[i] = 0
					}
				}
			}
		}
	}
}
