package kernels

import "unsafe"

// im2col and col2im over tiles: rows [r0, r1) of a group's im2col matrix
// ((c, r, s) row-major, c·R·S+r·S+s) by the columns of output rows
// [oh0, oh1), stored densely. Entry (row, (oh, ow)) is x[c, oh·sh−ph+r·dh,
// ow·sw−pw+s·dw], or 0 in the padding.
//
// Fast paths: when stride is 1 and OW = W (the "same" padding,
// 2·pw = dw·(S−1), whatever the dilation), the input rows a tile row reads
// are contiguous and exactly as wide as its output rows, so one tile row
// is one copy (or one vector add) shifted by the column offset, and only
// the padding columns are fixed up. Otherwise each output row is a copy
// (stride 1) or a strided gather; rows wholly in the padding are cleared
// (skipped by col2im).

// convElem is an element im2col copies: a float, or the bit pattern of a
// 16-bit float.
type convElem interface{ Float | ~uint16 }

// sameConv reports whether the convolution takes the contiguous fast path.
func sameConv(p *ConvArgs) bool {
	return p.StrideH == 1 && p.StrideW == 1 && p.W == p.OW
}

// convTap is one kernel row's (or column's) offset into the input,
// r·dilation − padding, and the outputs [lo, hi) whose input row (or
// column) o·stride + off lies inside the input.
type convTap struct{ off, lo, hi int }

// convTaps are a convolution's taps: R rows, then S columns.
type convTaps []convTap

// set fills t with p's taps, reusing its memory.
func (t *convTaps) set(p *ConvArgs) {
	*t = (*t)[:0]
	for r := range p.R {
		off := r*p.DilH - p.PadH
		lo, hi := convRange(off, p.StrideH, p.H, p.OH)
		*t = append(*t, convTap{off, lo, hi})
	}
	for s := range p.S {
		off := s*p.DilW - p.PadW
		lo, hi := convRange(off, p.StrideW, p.W, p.OW)
		*t = append(*t, convTap{off, lo, hi})
	}
}

// tileRow walks the rows of a group's im2col matrix: channel c, kernel
// row r and column s of the current one.
type tileRow struct{ c, r, s int }

func firstRow(p *ConvArgs, row int) tileRow {
	k := row % (p.R * p.S)
	return tileRow{row / (p.R * p.S), k / p.S, k % p.S}
}

func (t tileRow) next(p *ConvArgs) tileRow {
	if t.s++; t.s == p.S {
		t.s = 0
		if t.r++; t.r == p.R {
			t.r = 0
			t.c++
		}
	}
	return t
}

// im2colTile writes the tile of x (cg planes of H×W) into col, whose rows
// start ld elements apart; taps are p's (convTaps.set).
func im2colTile[T convElem](p *ConvArgs, taps convTaps, col []T, ld int, x []T, r0, r1, oh0, oh1 int) {
	ow, hw := p.OW, p.H*p.W
	nb := (oh1 - oh0) * ow
	fast := sameConv(p)
	for row, t := r0, firstRow(p, r0); row < r1; row, t = row+1, t.next(p) {
		dst := col[(row-r0)*ld : (row-r0)*ld+nb]
		plane := x[t.c*hw : (t.c+1)*hw]
		ht, wt := taps[t.r], taps[p.R+t.s]
		hoff, woff := ht.off, wt.off
		hlo, hhi := max(ht.lo, oh0), min(ht.hi, oh1)
		if hlo >= hhi {
			clear(dst)
			continue
		}
		clear(dst[:(hlo-oh0)*ow])
		clear(dst[(hhi-oh0)*ow:])
		body := dst[(hlo-oh0)*ow : (hhi-oh0)*ow]
		wlo, whi := wt.lo, wt.hi
		if fast {
			// body[i] = plane[at+i] wherever that is inside the plane; the
			// entries outside it are padding columns, zeroed below.
			at := (hlo+hoff)*p.W + woff
			if lo, hi := max(0, -at), min(len(body), hw-at); lo < hi {
				copy(body[lo:hi], plane[at+lo:at+hi])
			}
			zeroColumns(body, ow, wlo, whi)
			continue
		}
		if wlo >= whi {
			clear(body)
			continue
		}
		zeroColumns(body, ow, wlo, whi)
		// Output row oh reads input row oh·sh+hoff from column wlo·sw+woff.
		sw, n, rows := p.StrideW, whi-wlo, hhi-hlo
		at, step := (hlo*p.StrideH+hoff)*p.W+wlo*sw+woff, p.StrideH*p.W
		if sw == 2 {
			gatherRows2(body[wlo:], plane[at:], rows, n, ow, step, p.W-(2*wlo+woff))
			continue
		}
		for o := wlo; o < len(body); o, at = o+ow, at+step {
			out := body[o : o+n]
			if sw == 1 {
				copy(out, plane[at:at+n])
				continue
			}
			in := plane[at : at+(n-1)*sw+1]
			for i := range out {
				out[i] = in[i*sw]
			}
		}
	}
}

// im2colSamples writes the tiles of ns consecutive samples side by side
// into col (rows of ns·nb elements, sample s at column s·nb); x starts at
// the first sample's group of channels, d are p's dims.
func im2colSamples[T convElem](p *ConvArgs, taps convTaps, d *convDims, col, x []T, ns, r0, r1, oh0, oh1 int) {
	nb := (oh1 - oh0) * p.OW
	for s := range ns {
		im2colTile(p, taps, col[s*nb:], ns*nb, x[s*d.xs:s*d.xs+d.cg*d.hw], r0, r1, oh0, oh1)
	}
}

// gatherSamples copies the kg rows of dy of ns consecutive samples,
// columns [off, off+cols) of each, side by side into dst (rows of
// ns·cols, sample s at column s·cols); dy starts at the first sample's
// group of channels, d are the convolution's dims.
func gatherSamples[T convElem](dst, dy []T, d *convDims, ns, cols, off int) {
	nb := ns * cols
	for s := range ns {
		for k := range d.kg {
			copy(dst[k*nb+s*cols:][:cols], dy[s*d.ys+k*d.ohw+off:][:cols])
		}
	}
}

// col2imTile adds the tile's rows [0, rows) (whole channels, the first at
// dx[0:H·W]; rows ld elements apart in col) into dx at the positions im2colTile reads them from. The
// tile's padding entries are discarded (the fast path zeroes them in col
// first, so col is clobbered).
func col2imTile[T Float](p *ConvArgs, taps convTaps, dx, col []T, ld, rows, oh0, oh1 int) {
	ow, hw := p.OW, p.H*p.W
	nb := (oh1 - oh0) * ow
	fast := sameConv(p)
	for row, t := 0, (tileRow{}); row < rows; row, t = row+1, t.next(p) {
		src := col[row*ld : row*ld+nb]
		plane := dx[t.c*hw : (t.c+1)*hw]
		ht, wt := taps[t.r], taps[p.R+t.s]
		hoff, woff := ht.off, wt.off
		hlo, hhi := max(ht.lo, oh0), min(ht.hi, oh1)
		if hlo >= hhi {
			continue
		}
		body := src[(hlo-oh0)*ow : (hhi-oh0)*ow]
		wlo, whi := wt.lo, wt.hi
		if fast {
			zeroColumns(body, ow, wlo, whi)
			at := (hlo+hoff)*p.W + woff
			if lo, hi := max(0, -at), min(len(body), hw-at); lo < hi {
				addTo(plane[at+lo:at+hi], body[lo:hi])
			}
			continue
		}
		if wlo >= whi {
			continue
		}
		// Output row oh adds into input row oh·sh+hoff from column wlo·sw+woff.
		sw, n, rows := p.StrideW, whi-wlo, hhi-hlo
		at, step := (hlo*p.StrideH+hoff)*p.W+wlo*sw+woff, p.StrideH*p.W
		if sw == 2 {
			scatterRows2Add(plane[at:], body[wlo:], rows, n, step, ow, p.W-(2*wlo+woff))
			continue
		}
		for o := wlo; o < len(body); o, at = o+ow, at+step {
			in := body[o : o+n]
			if sw == 1 {
				addTo(plane[at:at+n], in)
				continue
			}
			out := plane[at : at+(n-1)*sw+1]
			for i, v := range in {
				out[i*sw] += v
			}
		}
	}
}

// zeroRow zeroes out[:lo] and out[hi:] (all of out when lo ≥ hi).
func zeroRow[T convElem](out []T, lo, hi int) {
	for i := range min(lo, len(out)) {
		out[i] = 0
	}
	for i := max(hi, lo); i < len(out); i++ {
		out[i] = 0
	}
}

// zeroColumns zeroes columns [0, lo) and [hi, w) of the rows of width w in
// body.
func zeroColumns[T convElem](body []T, w, lo, hi int) {
	switch {
	case lo == 0 && hi == w:
	case lo == 1 && hi == w:
		for o := 0; o < len(body); o += w {
			body[o] = 0
		}
	case lo == 0 && hi == w-1:
		for o := w - 1; o < len(body); o += w {
			body[o] = 0
		}
	default:
		for o := 0; o < len(body); o += w {
			zeroRow(body[o:o+w], lo, hi)
		}
	}
}

// addTo adds src into dst elementwise (dst[i] += src[i]; same length).
func addTo[T Float](dst, src []T) {
	src = src[:len(dst)]
	h := 0
	if d32, ok := f32s(dst); ok && CPU.AVX2FMA && len(dst) >= 8 {
		s32, _ := f32s(src)
		h = len(dst) &^ 7
		vecAddF32(&d32[0], &d32[0], &s32[0], h)
	}
	for i := h; i < len(dst); i++ {
		dst[i] += src[i]
	}
}

// gatherRows2 sets dst[r·dstStep+i] = src[r·srcStep+2i] for rows rows
// and i < n. A source row holds avail ≥ 2n−1 elements from its start;
// the assembly reads whole blocks of 16 (float32) or 32 (16-bit) of them.
func gatherRows2[T convElem](dst, src []T, rows, n, dstStep, srcStep, avail int) {
	switch any(dst).(type) {
	case []float32, []uint16:
		if CPU.AVX2FMA {
			// A block writes 32 bytes of outputs.
			per := 32 / int(unsafe.Sizeof(dst[0]))
			blocks := min(n, avail/2) / per
			_ = dst[(rows-1)*dstStep+n-1]
			_ = src[(rows-1)*srcStep+max(2*n-1, 2*per*blocks)-1]
			if d, ok := any(dst).([]float32); ok {
				convGather2RowsF32(&d[0], &any(src).([]float32)[0], rows, n, dstStep, srcStep, blocks)
				return
			}
			convGather2RowsU16(&any(dst).([]uint16)[0], &any(src).([]uint16)[0], rows, n, dstStep, srcStep, blocks)
			return
		}
	}
	for r := range rows {
		d, s := dst[r*dstStep:r*dstStep+n], src[r*srcStep:r*srcStep+2*n-1]
		i := 0
		for ; i+4 <= len(d); i += 4 {
			v, o := s[2*i:2*i+7:2*i+7], d[i:i+4:i+4]
			o[0], o[1], o[2], o[3] = v[0], v[2], v[4], v[6]
		}
		for ; i < len(d); i++ {
			d[i] = s[2*i]
		}
	}
}

// scatterRows2Add adds src[r·srcStep+i] to dst[r·dstStep+2i] for rows rows
// and i < n. A destination row holds avail ≥ 2n−1 elements from its start,
// all the caller's; the assembly reads and writes whole blocks of 16 of
// them (adding +0 to the odd ones).
func scatterRows2Add[T Float](dst, src []T, rows, n, dstStep, srcStep, avail int) {
	if s32, ok := f32s(src); ok && CPU.AVX2FMA {
		blocks := min(n, avail/2) / 8
		_ = src[(rows-1)*srcStep+n-1]
		_ = dst[(rows-1)*dstStep+max(2*n-1, 16*blocks)-1]
		d32, _ := f32s(dst)
		convScatter2AddRowsF32(&d32[0], &s32[0], rows, n, dstStep, srcStep, blocks)
		return
	}
	for r := range rows {
		d, s := dst[r*dstStep:r*dstStep+2*n-1], src[r*srcStep:r*srcStep+n]
		for i, v := range s {
			d[2*i] += v
		}
	}
}
