package kernels

// The Winograd F(2×2, 3×3) transforms (conv_wino.go), in Go:
//
//	G = | 1    0    0  |   Bᵀ = | 1  0 −1  0 |   Aᵀ = | 1  1  1  0 |
//	    | ½    ½    ½  |        | 0  1  1  0 |        | 0  1 −1 −1 |
//	    | ½   −½    ½  |        | 0 −1  1  0 |
//	    | 0    0    1  |        | 0  1  0 −1 |
//
// V = G·g·Gᵀ (4×4 from a 3×3 filter g), U = Bᵀ·d·B (4×4 from a 4×4
// input window d), Y = Aᵀ·m·A (2×2 from the 4×4 products m); position
// ξ = 4·row + column.

// winoFilter writes V = G·g·Gᵀ of the 3×3 filter g (row-major): t = G·g
// (t0 … t11, row by row), then each row of t times Gᵀ.
func winoFilter(v *[16]float32, g *[9]float32) {
	t0, t1, t2 := g[0], g[1], g[2]   // row 0 of G·g
	t9, t10, t11 := g[6], g[7], g[8] // row 3
	t3, t4, t5 := 0.5*(g[0]+g[3]+g[6]), 0.5*(g[1]+g[4]+g[7]), 0.5*(g[2]+g[5]+g[8])
	t6, t7, t8 := 0.5*(g[0]-g[3]+g[6]), 0.5*(g[1]-g[4]+g[7]), 0.5*(g[2]-g[5]+g[8])
	v[0], v[1], v[2], v[3] = t0, 0.5*(t0+t1+t2), 0.5*(t0-t1+t2), t2
	v[4], v[5], v[6], v[7] = t3, 0.5*(t3+t4+t5), 0.5*(t3-t4+t5), t5
	v[8], v[9], v[10], v[11] = t6, 0.5*(t6+t7+t8), 0.5*(t6-t7+t8), t8
	v[12], v[13], v[14], v[15] = t9, 0.5*(t9+t10+t11), 0.5*(t9-t10+t11), t11
}

// winoInput writes U = Bᵀ·d·B of the 4×4 window d (row-major) into
// column i (mod 32) of u.
func winoInput(u *winoPanel, i int, d *[16]float32) {
	i &= 31
	var e [16]float32 // Bᵀ·d
	for c := range 4 {
		d0, d1, d2, d3 := d[c], d[4+c], d[8+c], d[12+c]
		e[c], e[4+c], e[8+c], e[12+c] = d0-d2, d1+d2, d2-d1, d1-d3
	}
	for r := range 4 {
		e0, e1, e2, e3 := e[4*r], e[4*r+1], e[4*r+2], e[4*r+3]
		u[4*r][i], u[4*r+1][i], u[4*r+2][i], u[4*r+3][i] = e0-e2, e1+e2, e2-e1, e1-e3
	}
}

// winoOutput writes Y = Aᵀ·m·A (2×2, row-major) of the 4×4 products m,
// column i (mod 32) of m.
func winoOutput(y *[4]float32, m *winoPanel, i int) {
	i &= 31
	var s [8]float32 // Aᵀ·m, 2×4
	for c := range 4 {
		m0, m1, m2, m3 := m[c][i], m[4+c][i], m[8+c][i], m[12+c][i]
		s[c], s[4+c] = m0+m1+m2, m1-m2-m3
	}
	for r := range 2 {
		s0, s1, s2, s3 := s[4*r], s[4*r+1], s[4*r+2], s[4*r+3]
		y[2*r], y[2*r+1] = s0+s1+s2, s1-s2-s3
	}
}

// filters transforms the filters of the row panels [lo, hi) of every
// V_ξ (mr output channels each) into their packed A layout (packWholeA's
// for the GEMM kernel: kc slices of mr-row panels, rows past K zero).
// The panel's rows are innermost, so that both w[o][i] (mr streams along
// i) and the input gradient's w[i][o] (a run of mr filters) are read in
// order.
func (j *winoJob) filters(lo, hi int) {
	q, mr := &j.q, j.kn.mr
	mp := roundUp(q.K, mr)
	var g [9]float32
	var v [16]float32
	for rb := lo * mr; rb < min(hi*mr, mp); rb += mr {
		for pc := 0; pc < q.C; pc += j.step {
			kc := min(j.step, q.C-pc)
			for i := pc; i < pc+kc; i++ {
				at := pc*mp + rb*kc + (i-pc)*mr
				for o := rb; o < rb+mr; o, at = o+1, at+1 {
					v = [16]float32{}
					if o < q.K {
						j.filter(&g, o, i)
						winoFilter(&v, &g)
					}
					for xi := range 16 {
						j.v[xi*j.aper+at] = v[xi]
					}
				}
			}
		}
	}
}

// filter reads the 3×3 filter from input channel i to output channel o
// of q: w[o][i] forward, w[i][o] rotated 180° for the input gradient.
func (j *winoJob) filter(g *[9]float32, o, i int) {
	if !j.flip {
		*g = [9]float32(j.w[(o*j.q.C+i)*9:][:9]) // inline, not a memmove call
		return
	}
	src := j.w[(i*j.q.K+o)*9:][:9]
	for r := range 9 {
		g[r] = src[8-r]
	}
}

// winoPanel is a run of up to 32 tiles' values at the 16 positions:
// one packed B panel's row (nr ≤ 32) of each U_ξ, or one row of M_ξ.
type winoPanel [16][32]float32

// winoCursor walks tiles in order: sample n, tile row ty, column tx.
type winoCursor struct{ n, ty, tx, th, tw int }

// winoAt returns the cursor at tile t of layout l.
func winoAt(l *winoLayout, t int) winoCursor {
	tp := l.th * l.tw
	return winoCursor{n: t / tp, ty: t % tp / l.tw, tx: t % l.tw, th: l.th, tw: l.tw}
}

// skip moves the cursor n tiles on along its tile row (tx+n ≤ tw).
func (c *winoCursor) skip(n int) {
	if c.tx += n; c.tx == c.tw {
		if c.tx, c.ty = 0, c.ty+1; c.ty == c.th {
			c.ty, c.n = 0, c.n+1
		}
	}
}

// next moves the cursor to the following tile.
func (c *winoCursor) next() { c.skip(1) }

// inputs transforms the input windows of tiles [t0, t0+nu) into the
// packed B panels of U_ξ (usz words apart): channel c of tile l at
// depth c, column l, in gemmPackedB's layout (nr-column panels of each
// kc slice); columns past nu are zero. A panel row of each U_ξ is built
// in blk, eight tiles of one tile row at a time where the panel and the
// row allow (run8), then copied.
func (j *winoJob) inputs(ub []float32, usz, t0, nu int) {
	q, nr := &j.q, j.kn.nr
	np := roundUp(nu, nr)
	var blk winoPanel
	var d [16]float32
	var pad [4 * 24]float32
	pp := winoPadded{n: -1}
	small := (q.H+2*q.PadH+1)*(q.W+2*q.PadW+1) <= winoPadWords
	for c := range q.C {
		pc := c / j.step * j.step
		kc := min(j.step, q.C-pc)
		at := pc*np + (c-pc)*nr
		t := winoAt(&j.lay, t0)
		for l0 := 0; l0 < nu; l0, at = l0+nr, at+nr*kc {
			cnt := min(nr, nu-l0)
			for i := 0; i < cnt; {
				plane := j.x[(t.n*q.C+c)*q.H*q.W:][:q.H*q.W]
				h0, w0 := 2*t.ty-q.PadH, 2*t.tx-q.PadW
				if i+8 <= cnt && t.tx+8 <= t.tw {
					src, ld := j.rows8(&pad, plane, h0, w0)
					winoInput8(&blk, i, src, ld)
					t.skip(8)
					i += 8
					continue
				}
				if small {
					pp.load(q, plane, t.n, c)
					pp.window(&d, t.ty, t.tx)
				} else {
					j.window(&d, plane, h0, w0)
				}
				winoInput(&blk, i, &d)
				t.next()
				i++
			}
			for xi := range 16 {
				dst := ub[xi*usz+at:][:nr]
				if cnt == 16 && nr == 16 { // the AVX2 kernel's whole panel, inline
					*(*[16]float32)(dst) = [16]float32(blk[xi][:16])
					continue
				}
				copy(dst, blk[xi][:cnt])
				clear(dst[cnt:])
			}
		}
	}
}

// rows8 returns the four rows of 18 values from row h0 and column w0 of
// plane that eight tiles side by side read, and their stride: in place
// when they lie inside the plane, else copied into pad (24 apart) with
// zeros outside it.
func (j *winoJob) rows8(pad *[4 * 24]float32, plane []float32, h0, w0 int) ([]float32, int) {
	H, W := j.q.H, j.q.W
	if h0 >= 0 && h0+4 <= H && w0 >= 0 && w0+18 <= W {
		return plane[h0*W+w0 : (h0+3)*W+w0+18], W
	}
	clear(pad[:])
	for r := range 4 {
		if h := h0 + r; h >= 0 && h < H {
			lo, hi := max(0, -w0), min(18, W-w0)
			if lo < hi {
				copy(pad[24*r+lo:24*r+hi], plane[h*W+w0+lo:])
			}
		}
	}
	return pad[:], 24
}

// winoInput8 writes U of the eight windows src[r·ld + 2t + c] (t < 8,
// r, c < 4) into columns i … i+7 of blk: the assembly where the CPU has
// it, else winoInput8Go.
func winoInput8(blk *winoPanel, i int, src []float32, ld int) {
	_ = src[3*ld+17]
	_ = blk[0][i+7]
	if winoAsm {
		winoInput8AVX2(blk, i, &src[0], ld)
		return
	}
	winoInput8Go(blk, i, src, ld)
}

// winoInput8Go is winoInput8's Go twin: winoInput tile by tile.
func winoInput8Go(blk *winoPanel, i int, src []float32, ld int) {
	var d [16]float32
	for t := range 8 {
		for r := range 4 {
			copy(d[4*r:4*r+4], src[r*ld+2*t:])
		}
		winoInput(blk, i+t, &d)
	}
}

// winoOutput8 writes Y of the products in columns i … i+7 of blk into
// dst[r·ld + 2t + c] (t < 8, r, c < 2): the assembly where the CPU has
// it, else winoOutput8Go.
func winoOutput8(blk *winoPanel, i int, dst []float32, ld int) {
	_ = dst[ld+15]
	_ = blk[0][i+7]
	if winoAsm {
		winoOutput8AVX2(blk, i, &dst[0], ld)
		return
	}
	winoOutput8Go(blk, i, dst, ld)
}

// winoOutput8Go is winoOutput8's Go twin: winoOutput tile by tile.
func winoOutput8Go(blk *winoPanel, i int, dst []float32, ld int) {
	var y [4]float32
	for t := range 8 {
		winoOutput(&y, blk, i+t)
		dst[2*t], dst[2*t+1], dst[ld+2*t], dst[ld+2*t+1] = y[0], y[1], y[2], y[3]
	}
}

// winoPadWords bounds winoPadded's plane (4 KiB on the stack).
const winoPadWords = 1024

// winoPadded is a zero-padded copy of one input plane (sample n, channel
// c), (H+2·PadH+1) × (W+2·PadW+1), for planes that fit winoPadWords:
// every tile's window lies inside it, so the tiles that do not run eight
// at a time (all of them over planes narrower than 16) read it without
// bounds tests.
type winoPadded struct {
	v     [winoPadWords]float32
	pw    int // row length
	n, ch int // the plane held (n −1: none)
}

// load copies plane (sample n, channel c of q) into pp unless it holds it.
func (pp *winoPadded) load(q *ConvArgs, plane []float32, n, c int) {
	if pp.n == n && pp.ch == c {
		return
	}
	pw := q.W + 2*q.PadW + 1
	clear(pp.v[:pw*(q.H+2*q.PadH+1)])
	for h := range q.H {
		copy(pp.v[(h+q.PadH)*pw+q.PadW:], plane[h*q.W:(h+1)*q.W])
	}
	pp.pw, pp.n, pp.ch = pw, n, c
}

// window reads tile (ty, tx)'s 4×4 window from the padded plane.
func (pp *winoPadded) window(d *[16]float32, ty, tx int) {
	at := 2*ty*pp.pw + 2*tx
	for r := range 4 {
		row := pp.v[at+r*pp.pw:][:4]
		d[4*r], d[4*r+1], d[4*r+2], d[4*r+3] = row[0], row[1], row[2], row[3]
	}
}

// window reads the 4×4 window of plane (H × W of q) from row h0 and
// column w0, zero outside the plane.
func (j *winoJob) window(d *[16]float32, plane []float32, h0, w0 int) {
	H, W := j.q.H, j.q.W
	if h0 >= 0 && h0+4 <= H && w0 >= 0 && w0+4 <= W {
		for r := range 4 {
			row := plane[(h0+r)*W+w0:][:4]
			d[4*r], d[4*r+1], d[4*r+2], d[4*r+3] = row[0], row[1], row[2], row[3]
		}
		return
	}
	for r := range 4 {
		for c := range 4 {
			h, w := h0+r, w0+c
			d[4*r+c] = 0
			if h >= 0 && h < H && w >= 0 && w < W {
				d[4*r+c] = plane[h*W+w]
			}
		}
	}
}

// outputs transforms the products of tiles [t0, t0+nu) (M_ξ, msz words
// apart, K × nu each) into y, clipping tiles past the plane's edge: a
// run of up to 32 tiles' products is copied into blk, then transformed,
// eight tiles of one tile row at a time where the run and the row allow.
func (j *winoJob) outputs(mb []float32, msz, t0, nu int) {
	q := &j.q
	var blk winoPanel
	var y [4]float32
	var pad [2 * 16]float32
	for k := range q.K {
		t := winoAt(&j.lay, t0)
		for l0 := 0; l0 < nu; l0 += 32 {
			cnt := min(32, nu-l0)
			for xi := range 16 {
				src := mb[xi*msz+k*nu+l0:][:cnt]
				if cnt == 32 { // inline, not a memmove call
					blk[xi] = [32]float32(src)
					continue
				}
				copy(blk[xi][:cnt], src)
			}
			for i := 0; i < cnt; {
				if i+8 <= cnt && t.tx+8 <= t.tw {
					j.store8(&blk, &pad, i, k, &t)
					t.skip(8)
					i += 8
					continue
				}
				winoOutput(&y, &blk, i)
				j.store(&y, k, &t)
				t.next()
				i++
			}
		}
	}
}

// store8 writes the outputs of filter k at the eight tiles from t (one
// tile row), columns i … i+7 of blk: in place when they lie inside the
// plane, else through pad, clipped.
func (j *winoJob) store8(blk *winoPanel, pad *[2 * 16]float32, i, k int, t *winoCursor) {
	q := &j.q
	plane := j.y[(t.n*q.K+k)*q.OH*q.OW:][:q.OH*q.OW]
	h, w := 2*t.ty, 2*t.tx
	if h+2 <= q.OH && w+16 <= q.OW {
		winoOutput8(blk, i, plane[h*q.OW+w:(h+1)*q.OW+w+16], q.OW)
		return
	}
	winoOutput8(blk, i, pad[:], 16)
	for r := range min(2, q.OH-h) {
		copy(plane[(h+r)*q.OW+w:(h+r+1)*q.OW], pad[16*r:16*r+min(16, q.OW-w)])
	}
}

// store writes the 2×2 outputs y of filter k at tile t into y of q,
// clipped to the plane.
func (j *winoJob) store(y *[4]float32, k int, t *winoCursor) {
	q := &j.q
	plane := j.y[(t.n*q.K+k)*q.OH*q.OW:][:q.OH*q.OW]
	h, w := 2*t.ty, 2*t.tx
	if h+2 <= q.OH && w+2 <= q.OW {
		r0, r1 := plane[h*q.OW+w:][:2], plane[(h+1)*q.OW+w:][:2]
		r0[0], r0[1], r1[0], r1[1] = y[0], y[1], y[2], y[3]
		return
	}
	for r := range min(2, q.OH-h) {
		for c := range min(2, q.OW-w) {
			plane[(h+r)*q.OW+w+c] = y[2*r+c]
		}
	}
}
