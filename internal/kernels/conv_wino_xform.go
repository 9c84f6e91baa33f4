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

// winoFilter writes V = G·g·Gᵀ of the 3×3 filter g (row-major).
func winoFilter(v *[16]float32, g *[9]float32) {
	var t [12]float32 // G·g, 4×3
	for c := range 3 {
		a, b, e := g[c], g[3+c], g[6+c]
		t[c], t[3+c], t[6+c], t[9+c] = a, 0.5*(a+b+e), 0.5*(a-b+e), e
	}
	for r := range 4 {
		a, b, e := t[3*r], t[3*r+1], t[3*r+2]
		v[4*r], v[4*r+1], v[4*r+2], v[4*r+3] = a, 0.5*(a+b+e), 0.5*(a-b+e), e
	}
}

// winoInput writes U = Bᵀ·d·B of the 4×4 window d (row-major).
func winoInput(u, d *[16]float32) {
	var e [16]float32 // Bᵀ·d
	for c := range 4 {
		d0, d1, d2, d3 := d[c], d[4+c], d[8+c], d[12+c]
		e[c], e[4+c], e[8+c], e[12+c] = d0-d2, d1+d2, d2-d1, d1-d3
	}
	for r := range 4 {
		e0, e1, e2, e3 := e[4*r], e[4*r+1], e[4*r+2], e[4*r+3]
		u[4*r], u[4*r+1], u[4*r+2], u[4*r+3] = e0-e2, e1+e2, e2-e1, e1-e3
	}
}

// winoOutput writes Y = Aᵀ·m·A (2×2, row-major) of the 4×4 products m.
func winoOutput(y *[4]float32, m *[16]float32) {
	var s [8]float32 // Aᵀ·m, 2×4
	for c := range 4 {
		m0, m1, m2, m3 := m[c], m[4+c], m[8+c], m[12+c]
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
func (j *winoJob) filters(lo, hi int) {
	q, mr := &j.q, j.kn.mr
	mp := roundUp(q.K, mr)
	var g [9]float32
	var v [16]float32
	for o := lo * mr; o < min(hi*mr, mp); o++ {
		rb, om := o/mr*mr, o%mr
		for i := range q.C {
			if o < q.K {
				j.filter(&g, o, i)
				winoFilter(&v, &g)
			} else {
				v = [16]float32{}
			}
			pc := i / j.step * j.step
			at := pc*mp + rb*min(j.step, q.C-pc) + (i-pc)*mr + om
			for xi := range 16 {
				j.v[xi*j.aper+at] = v[xi]
			}
		}
	}
}

// filter reads the 3×3 filter from input channel i to output channel o
// of q: w[o][i] forward, w[i][o] rotated 180° for the input gradient.
func (j *winoJob) filter(g *[9]float32, o, i int) {
	if !j.flip {
		copy(g[:], j.w[(o*j.q.C+i)*9:][:9])
		return
	}
	src := j.w[(i*j.q.K+o)*9:][:9]
	for r := range 9 {
		g[r] = src[8-r]
	}
}

// inputs transforms the input windows of tiles [t0, t0+nu) into the
// packed B panels of U_ξ (usz words apart): channel c of tile l at
// depth c, column l, in gemmPackedB's layout; columns past nu are zero.
func (j *winoJob) inputs(ub []float32, usz, t0, nu int) {
	q, nr := &j.q, j.kn.nr
	np := roundUp(nu, nr)
	var d, u [16]float32
	for c := range q.C {
		pc := c / j.step * j.step
		kc := min(j.step, q.C-pc)
		base := pc*np + (c-pc)*nr
		tp := j.lay.th * j.lay.tw
		n, ty, tx := t0/tp, t0%tp/j.lay.tw, t0%j.lay.tw
		for l := range np {
			if l < nu {
				plane := j.x[(n*q.C+c)*q.H*q.W:][:q.H*q.W]
				j.window(&d, plane, 2*ty-q.PadH, 2*tx-q.PadW)
				winoInput(&u, &d)
				if tx++; tx == j.lay.tw {
					if tx, ty = 0, ty+1; ty == j.lay.th {
						ty, n = 0, n+1
					}
				}
			} else {
				u = [16]float32{}
			}
			at := base + l/nr*nr*kc + l%nr
			for xi := range 16 {
				ub[xi*usz+at] = u[xi]
			}
		}
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
// apart, K × nu each) into y, clipping tiles past the plane's edge.
func (j *winoJob) outputs(mb []float32, msz, t0, nu int) {
	q := &j.q
	var m [16]float32
	var y [4]float32
	tp := j.lay.th * j.lay.tw
	for k := range q.K {
		n, ty, tx := t0/tp, t0%tp/j.lay.tw, t0%j.lay.tw
		for l := range nu {
			for xi := range 16 {
				m[xi] = mb[xi*msz+k*nu+l]
			}
			winoOutput(&y, &m)
			plane := j.y[(n*q.K+k)*q.OH*q.OW:][:q.OH*q.OW]
			h, w := 2*ty, 2*tx
			for r := range min(2, q.OH-h) {
				for c := range min(2, q.OW-w) {
					plane[(h+r)*q.OW+w+c] = y[2*r+c]
				}
			}
			if tx++; tx == j.lay.tw {
				if tx, ty = 0, ty+1; ty == j.lay.th {
					ty, n = 0, n+1
				}
			}
		}
	}
}
