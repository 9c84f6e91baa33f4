package kernels

import "math"

// The pooling kernels split the N·C planes across the workers (normFor in
// norm.go); each plane is computed as before, so results do not change.

// PoolArgs describes a 2-D pooling window over (N, C, H, W) → (N, C, OH, OW)
// (see device.Pool2d): kernel KH×KW, stride, padding and dilation. All
// slices passed with it are contiguous and start at their first element.
type PoolArgs struct {
	N, C, H, W int
	KH, KW     int
	SH, SW     int
	PH, PW     int
	DH, DW     int
	OH, OW     int
	// CountPad includes padding in the average's divisor.
	CountPad bool
}

// window returns, for output (oh, ow), the first input row and column of
// its window (possibly in the padding) and the ranges [rlo, rhi), [slo,
// shi) of kernel taps that fall inside the input.
func (p PoolArgs) window(oh, ow int) (h0, w0, rlo, rhi, slo, shi int) {
	h0, w0 = oh*p.SH-p.PH, ow*p.SW-p.PW
	rlo, rhi = convRange(h0, p.DH, p.H, p.KH)
	slo, shi = convRange(w0, p.DW, p.W, p.KW)
	return
}

// maxAt returns the index in plane (H×W) of the first maximum of window
// (oh, ow), -1 when the window lies wholly in the padding. NaN counts as
// larger than any number (the first NaN wins), as in PyTorch.
func maxAt[T Float](p PoolArgs, plane []T, oh, ow int) int {
	h0, w0, rlo, rhi, slo, shi := p.window(oh, ow)
	best, at := T(0), -1
	for r := rlo; r < rhi; r++ {
		row := (h0 + r*p.DH) * p.W
		for s := slo; s < shi; s++ {
			i := row + w0 + s*p.DW
			v := plane[i]
			if at < 0 || v > best || (v != v && best == best) {
				best, at = v, i
			}
		}
	}
	return at
}

// MaxPool2d writes each window's maximum of x into y; a window wholly in
// the padding (impossible when padding ≤ kernel/2) gives −Inf.
func MaxPool2d[T Float](p PoolArgs, y, x []T) {
	hw, ohw := p.H*p.W, p.OH*p.OW
	normFor(p.N*p.C, hw+ohw, func(lo, hi int) {
		for nc := lo; nc < hi; nc++ {
			plane, out := x[nc*hw:(nc+1)*hw], y[nc*ohw:(nc+1)*ohw]
			for oh := range p.OH {
				for ow := range p.OW {
					v := T(math.Inf(-1))
					if i := maxAt(p, plane, oh, ow); i >= 0 {
						v = plane[i]
					}
					out[oh*p.OW+ow] = v
				}
			}
		}
	})
}

// MaxPool2dGrad overwrites dx with the sum of the dy of every window whose
// first maximum (recomputed from x) is at that position.
func MaxPool2dGrad[T Float](p PoolArgs, dx, dy, x []T) {
	hw, ohw := p.H*p.W, p.OH*p.OW
	normFor(p.N*p.C, 2*hw+ohw, func(lo, hi int) {
		for nc := lo; nc < hi; nc++ {
			plane, g, d := x[nc*hw:(nc+1)*hw], dy[nc*ohw:(nc+1)*ohw], dx[nc*hw:(nc+1)*hw]
			clear(d)
			for oh := range p.OH {
				for ow := range p.OW {
					if i := maxAt(p, plane, oh, ow); i >= 0 {
						d[i] += g[oh*p.OW+ow]
					}
				}
			}
		}
	})
}

// divisor returns the number of elements a window's average divides by:
// KH·KW with CountPad (in floor mode every window lies within the padded
// input), else the taps inside the input.
func (p PoolArgs) divisor(rlo, rhi, slo, shi int) int {
	if p.CountPad {
		return p.KH * p.KW
	}
	return (rhi - rlo) * (shi - slo)
}

// AvgPool2d writes each window's mean of x into y, summing in float64. A
// window with no element inside the input (possible only without CountPad,
// with a dilation that steps over the input) gives 0.
func AvgPool2d[T Float](p PoolArgs, y, x []T) {
	hw, ohw := p.H*p.W, p.OH*p.OW
	normFor(p.N*p.C, hw+ohw, func(lo, hi int) {
		for nc := lo; nc < hi; nc++ {
			plane, out := x[nc*hw:(nc+1)*hw], y[nc*ohw:(nc+1)*ohw]
			for oh := range p.OH {
				for ow := range p.OW {
					h0, w0, rlo, rhi, slo, shi := p.window(oh, ow)
					var sum float64
					for r := rlo; r < rhi; r++ {
						row := (h0+r*p.DH)*p.W + w0
						for s := slo; s < shi; s++ {
							sum += float64(plane[row+s*p.DW])
						}
					}
					if div := p.divisor(rlo, rhi, slo, shi); div > 0 {
						out[oh*p.OW+ow] = T(sum / float64(div))
					} else {
						out[oh*p.OW+ow] = 0
					}
				}
			}
		}
	})
}

// AvgPool2dGrad overwrites dx with, at each position, the sum of dy/divisor
// over the windows that contain it.
func AvgPool2dGrad[T Float](p PoolArgs, dx, dy []T) {
	hw, ohw := p.H*p.W, p.OH*p.OW
	normFor(p.N*p.C, hw+ohw, func(lo, hi int) {
		for nc := lo; nc < hi; nc++ {
			d, g := dx[nc*hw:(nc+1)*hw], dy[nc*ohw:(nc+1)*ohw]
			clear(d)
			for oh := range p.OH {
				for ow := range p.OW {
					h0, w0, rlo, rhi, slo, shi := p.window(oh, ow)
					v := g[oh*p.OW+ow] / T(p.divisor(rlo, rhi, slo, shi))
					for r := rlo; r < rhi; r++ {
						row := (h0+r*p.DH)*p.W + w0
						for s := slo; s < shi; s++ {
							d[row+s*p.DW] += v
						}
					}
				}
			}
		}
	})
}

// adaptive returns PyTorch's adaptive window [floor(i·in/out),
// ceil((i+1)·in/out)) of output i.
func adaptive(i, in, out int) (lo, hi int) {
	return i * in / out, ((i+1)*in + out - 1) / out
}

// AdaptiveAvgPool2d averages x (n, c, h, w) into y (n, c, oh, ow) over
// PyTorch's adaptive windows, summing in float64.
func AdaptiveAvgPool2d[T Float](y, x []T, n, c, h, w, oh, ow int) {
	hw, ohw := h*w, oh*ow
	normFor(n*c, hw+ohw, func(lo, hi int) {
		for nc := lo; nc < hi; nc++ {
			plane, out := x[nc*hw:(nc+1)*hw], y[nc*ohw:(nc+1)*ohw]
			for i := range oh {
				hlo, hhi := adaptive(i, h, oh)
				for j := range ow {
					wlo, whi := adaptive(j, w, ow)
					var sum float64
					for r := hlo; r < hhi; r++ {
						for _, v := range plane[r*w+wlo : r*w+whi] {
							sum += float64(v)
						}
					}
					out[i*ow+j] = T(sum / float64((hhi-hlo)*(whi-wlo)))
				}
			}
		}
	})
}

// AdaptiveAvgPool2dGrad overwrites dx (n, c, h, w) with each dy (n, c, oh,
// ow) spread evenly over its window, overlapping windows adding up.
func AdaptiveAvgPool2dGrad[T Float](dx, dy []T, n, c, h, w, oh, ow int) {
	hw, ohw := h*w, oh*ow
	normFor(n*c, hw+ohw, func(lo, hi int) {
		for nc := lo; nc < hi; nc++ {
			d, g := dx[nc*hw:(nc+1)*hw], dy[nc*ohw:(nc+1)*ohw]
			clear(d)
			for i := range oh {
				hlo, hhi := adaptive(i, h, oh)
				for j := range ow {
					wlo, whi := adaptive(j, w, ow)
					v := g[i*ow+j] / T((hhi-hlo)*(whi-wlo))
					for r := hlo; r < hhi; r++ {
						row := d[r*w+wlo : r*w+whi]
						for k := range row {
							row[k] += v
						}
					}
				}
			}
		}
	})
}
