package kernels

// ConvArgs describes a 2-D convolution in NCHW layout (see device.Conv2d):
// input (N, C, H, W), weight (K, C/Groups, R, S), output (N, K, OH, OW).
// All slices passed with it are contiguous and start at their first element.
type ConvArgs struct {
	N, C, H, W       int
	K, R, S          int
	StrideH, StrideW int
	PadH, PadW       int
	DilH, DilW       int
	Groups           int
	OH, OW           int
}

// Pointwise reports whether the convolution is 1×1, stride 1 and unpadded:
// then a group of one sample is already the GEMM operand and no im2col is
// needed.
func (p ConvArgs) Pointwise() bool {
	return p.R == 1 && p.S == 1 && p.StrideH == 1 && p.StrideW == 1 && p.PadH == 0 && p.PadW == 0
}

// Workspace returns the elements of scratch the kernels need: one sample's
// im2col matrix for one group, (C/G·R·S)×(OH·OW), and none when pointwise.
func (p ConvArgs) Workspace() int {
	if p.Pointwise() {
		return 0
	}
	return p.C / p.Groups * p.R * p.S * p.OH * p.OW
}

// convDims are the per-group GEMM sizes of a convolution.
type convDims struct {
	cg, kg    int // channels and filters per group
	hw, ohw   int // input and output plane sizes
	crs       int // rows of one group's im2col matrix: cg·R·S
	xs, ys    int // elements of one sample of x and y
	wg        int // elements of one group's filters: kg·crs
	pointwise bool
}

func (p ConvArgs) dims() convDims {
	cg, kg := p.C/p.Groups, p.K/p.Groups
	return convDims{
		cg: cg, kg: kg, hw: p.H * p.W, ohw: p.OH * p.OW, crs: cg * p.R * p.S,
		xs: p.C * p.H * p.W, ys: p.K * p.OH * p.OW, wg: kg * cg * p.R * p.S,
		pointwise: p.Pointwise(),
	}
}

// Conv2d writes y (N, K, OH, OW) = x (N, C, H, W) ⋆ w (K, C/G, R, S): for
// each sample and group, im2col of the group's channels into ws (Workspace
// elements; unused and may be nil when pointwise), then one GEMM
// y_g (K/G × OH·OW) = w_g (K/G × C/G·R·S) · col (C/G·R·S × OH·OW).
func Conv2d[T Float](p ConvArgs, y, x, w, ws []T) {
	d := p.dims()
	for n := range p.N {
		for g := range p.Groups {
			xo := n*d.xs + g*d.cg*d.hw
			yo := n*d.ys + g*d.kg*d.ohw
			a := GemmArgs{M: d.kg, N: d.ohw, K: d.crs, Alpha: 1, OffA: g * d.wg, OffC: yo, LdA: d.crs, LdB: d.ohw, LdC: d.ohw}
			if d.pointwise {
				a.OffB = xo
				Gemm(a, w, x, y)
				continue
			}
			im2col(p, ws, x[xo:xo+d.cg*d.hw], d.cg)
			Gemm(a, w, ws, y)
		}
	}
}

// Conv2dGradInput writes dx (N, C, H, W), overwriting it, from dy (N, K,
// OH, OW) and w: per sample and group, col = w_gᵀ · dy_g into ws, then
// col2im adds each column entry back to the input position it was read
// from (overlapping windows accumulate).
func Conv2dGradInput[T Float](p ConvArgs, dx, dy, w, ws []T) {
	d := p.dims()
	for n := range p.N {
		for g := range p.Groups {
			xo := n*d.xs + g*d.cg*d.hw
			yo := n*d.ys + g*d.kg*d.ohw
			a := GemmArgs{TransA: true, M: d.crs, N: d.ohw, K: d.kg, Alpha: 1, OffA: g * d.wg, OffB: yo, LdA: d.crs, LdB: d.ohw, LdC: d.ohw}
			if d.pointwise {
				a.OffC = xo
				Gemm(a, w, dy, dx)
				continue
			}
			Gemm(a, w, dy, ws)
			col2im(p, dx[xo:xo+d.cg*d.hw], ws, d.cg)
		}
	}
}

// Conv2dGradWeight writes dw (K, C/G, R, S), overwriting it, from dy and x:
// dw_g = Σ over samples of dy_g (K/G × OH·OW) · colᵀ, the first sample with
// Beta 0 and the others accumulating with Beta 1.
func Conv2dGradWeight[T Float](p ConvArgs, dw, dy, x, ws []T) {
	d := p.dims()
	if p.N == 0 {
		clear(dw[:p.K*d.crs])
		return
	}
	for n := range p.N {
		beta := 1.0
		if n == 0 {
			beta = 0
		}
		for g := range p.Groups {
			xo := n*d.xs + g*d.cg*d.hw
			yo := n*d.ys + g*d.kg*d.ohw
			a := GemmArgs{TransB: true, M: d.kg, N: d.crs, K: d.ohw, Alpha: 1, Beta: beta, OffA: yo, OffC: g * d.wg, LdA: d.ohw, LdB: d.ohw, LdC: d.crs}
			if d.pointwise {
				a.OffB = xo
				Gemm(a, dy, x, dw)
				continue
			}
			im2col(p, ws, x[xo:xo+d.cg*d.hw], d.cg)
			Gemm(a, dy, ws, dw)
		}
	}
}

// convRange returns the outputs o in [0, n) whose input position o·stride+off
// lies in [0, size), as the half-open range [lo, hi).
func convRange(off, stride, size, n int) (lo, hi int) {
	if off < 0 {
		lo = (-off + stride - 1) / stride
	}
	if last := size - 1 - off; last >= 0 {
		hi = min(n, last/stride+1)
	}
	if lo > hi {
		lo = hi
	}
	return lo, hi
}

// im2col writes the (cg·R·S) × (OH·OW) matrix of x's cg channels (cg, H, W)
// into col: row (c, r, s), column (oh, ow) holds x[c, oh·sh−ph+r·dh,
// ow·sw−pw+s·dw], or 0 in the padding.
func im2col[T Float](p ConvArgs, col, x []T, cg int) {
	ohw := p.OH * p.OW
	row := 0
	for c := range cg {
		plane := x[c*p.H*p.W : (c+1)*p.H*p.W]
		for r := range p.R {
			hoff := r*p.DilH - p.PadH
			hlo, hhi := convRange(hoff, p.StrideH, p.H, p.OH)
			for s := range p.S {
				woff := s*p.DilW - p.PadW
				wlo, whi := convRange(woff, p.StrideW, p.W, p.OW)
				dst := col[row*ohw : (row+1)*ohw]
				row++
				for oh := range p.OH {
					out := dst[oh*p.OW : (oh+1)*p.OW]
					if oh < hlo || oh >= hhi {
						clear(out)
						continue
					}
					src := plane[(oh*p.StrideH+hoff)*p.W:]
					clear(out[:wlo])
					clear(out[whi:])
					if p.StrideW == 1 && wlo < whi {
						copy(out[wlo:whi], src[wlo+woff:whi+woff])
						continue
					}
					for ow := wlo; ow < whi; ow++ {
						out[ow] = src[ow*p.StrideW+woff]
					}
				}
			}
		}
	}
}

// col2im overwrites dx (cg, H, W) with the sum, over the entries of col,
// of each entry at the input position im2col read it from.
func col2im[T Float](p ConvArgs, dx, col []T, cg int) {
	clear(dx[:cg*p.H*p.W])
	ohw := p.OH * p.OW
	row := 0
	for c := range cg {
		plane := dx[c*p.H*p.W : (c+1)*p.H*p.W]
		for r := range p.R {
			hoff := r*p.DilH - p.PadH
			hlo, hhi := convRange(hoff, p.StrideH, p.H, p.OH)
			for s := range p.S {
				woff := s*p.DilW - p.PadW
				wlo, whi := convRange(woff, p.StrideW, p.W, p.OW)
				src := col[row*ohw : (row+1)*ohw]
				row++
				for oh := hlo; oh < hhi; oh++ {
					in := src[oh*p.OW : (oh+1)*p.OW]
					dst := plane[(oh*p.StrideH+hoff)*p.W:]
					for ow := wlo; ow < whi; ow++ {
						dst[ow*p.StrideW+woff] += in[ow]
					}
				}
			}
		}
	}
}
