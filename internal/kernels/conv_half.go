package kernels

import "unsafe"

// Convolutions with 16-bit operands. The three kernels below are Conv2d,
// Conv2dGradInput and Conv2dGradWeight for inputs held as 16-bit floats:
// im2col copies the 16-bit values themselves into the tile, and the GEMMs
// are GemmHalf's, so that with bfloat16 operands on a CPU with AVX512_BF16
// they run on VDPBF16PS, accumulating in float32 (see gemm_bf16.go for
// that instruction's rounding); elsewhere GemmHalf widens the values
// exactly while it packs them. No float32 copy of an operand is made.
//
// The output is float32 (ConvOut.F) or 16-bit (ConvOut.H). A 16-bit output
// is rounded once from float32: the forward pass rounds each band of y
// from a float32 tile of K/G × band columns, the input gradient each block
// of dx channels from a float32 block of block·H·W (col2im accumulates
// there), and the weight gradient sums the whole batch into a float32 dw
// (K·C/G·R·S elements, after the chunks' copies in the workspace) and rounds it at the end, as the float32 kernels sum it.
//
// Scratch: a worker's tile holds its 16-bit im2col tile (forward and
// weight gradient) or its float32 col tile (input gradient), plus the
// float32 output tile a 16-bit output needs; it is carved from ws (viewed
// as float32 words, whatever the caller's dtype) as for float32
// (conv_ws.go). A bfloat16 forward unit on the pair kernels holds instead
// the packed B it writes its im2col into, and its column masks
// (conv_half_pairs.go).

// Half16 is an operand of 16-bit floats: bit patterns, bfloat16 when BF16,
// else IEEE binary16.
type Half16 struct {
	Bits []uint16
	BF16 bool
}

// ConvOut is the output of a 16-bit convolution: float32 elements F when F
// is not nil, else the 16-bit H, rounded to nearest even from float32.
type ConvOut struct {
	F []float32
	H Half16
}

// Conv2dHalf is Conv2d with x and w held as 16-bit floats. ws holds at
// least ConvWorkspace(ConvForward, p, ConvHalf) float32 words, or is nil;
// the gradients' likewise.
func Conv2dHalf(p ConvArgs, y ConvOut, x, w Half16, ws []float32) {
	runConvHalf(ConvForward, p, y, x, w, ws)
}

// runConvHalf runs kind over p on the direct route where useDirect takes
// it (forward only, conv_dx_route.go), else as a convolution job.
func runConvHalf(kind ConvKind, p ConvArgs, out ConvOut, a, b Half16, ws []float32) {
	if kind == ConvForward && useDirect(p, out, a, b) {
		conv2dDirect(p, out, a, b, ws)
		return
	}
	runConvJobHalf(kind, p, out, a, b, ws)
}

// Conv2dGradInputHalf is Conv2dGradInput with dy and w held as 16-bit
// floats. With bfloat16 dy and w at stride 1 over large planes, on AMX or
// where that forward convolution takes the direct route, it runs as the
// forward convolution of dy by the flipped filters (conv_flip.go).
func Conv2dGradInputHalf(p ConvArgs, dx ConvOut, dy, w Half16, ws []float32) {
	if q, ok := p.flipGradInput(); ok && dy.BF16 && w.BF16 && (convFlipGradInput || useDirect(q, dx, dy, w)) {
		gradInputFlipped(p, q, dx, dy, w, ws)
		return
	}
	runConvHalf(ConvGradInput, p, dx, dy, w, ws)
}

// Conv2dGradWeightHalf is Conv2dGradWeight with dy and x held as 16-bit
// floats; dw is summed over the batch in float32 and rounded once. With
// bfloat16 dy and x at stride 1 over large planes it runs without im2col
// (conv_dw.go) where the CPU has AVX512_BF16 (not AMX).
func Conv2dGradWeightHalf(p ConvArgs, dw ConvOut, dy, x Half16, ws []float32) {
	if useDirectWGrad(p, dy, x) {
		convDirectWGradIn(p, dw, dy, x, ws)
		return
	}
	runConvHalf(ConvGradWeight, p, dw, dy, x, ws)
}

// runConvJobHalf runs kind over p with 16-bit operands as a convolution
// job.
func runConvJobHalf(kind ConvKind, p ConvArgs, out ConvOut, a, b Half16, ws []float32) {
	j := convJobs32.get()
	j.half, j.ha, j.hb, j.ho = true, a, b, out.H
	j.run(kind, p, out.F, nil, nil, ws)
	j.half, j.ha, j.hb, j.ho = false, Half16{}, Half16{}, Half16{}
	convJobs32.put(j)
}

// convHalfTile is the layout of a worker's tile in a 16-bit call, in
// float32 words: a forward unit's packed pair panels (tp words, first, as
// im2colPairs writes them), the 16-bit im2col tile or the column masks
// (t16 values), the float32 col tile (tf) and the float32 output tile (fo).
type convHalfTile struct{ tp, t16, tf, fo int }

// words returns the tile's size in float32 words, the 16-bit tile rounded
// up to whole cache lines.
func (t convHalfTile) words() int { return t.tp + roundUp((t.t16+1)/2, 16) + t.tf + t.fo }

// split cuts a worker's tile into its parts after the packed panels.
func (t convHalfTile) split(tile []float32) (col16 []uint16, colF, fo []float32) {
	tile = tile[t.tp:]
	n := roundUp((t.t16+1)/2, 16)
	if t.t16 > 0 {
		col16 = unsafe.Slice((*uint16)(unsafe.Pointer(&tile[0])), t.t16)
	}
	return col16, tile[n : n+t.tf], tile[n+t.tf : n+t.tf+t.fo]
}

// narrowTo rounds src into the 16-bit h from element at on.
func narrowTo(h Half16, at int, src []float32) {
	dst := h.Bits[at : at+len(src)]
	if h.BF16 {
		f32ToBF16(dst, src)
		return
	}
	f32ToF16(dst, src)
}

// halfUnit runs unit u of a 16-bit call.
func (j *convJob[T]) halfUnit(u int, tile []float32) {
	switch j.kind {
	case ConvForward:
		j.forwardHalf(u, tile)
	case ConvGradInput:
		j.gradInputHalf(u, tile)
	default:
		j.gradWeightHalf(u, tile)
	}
}

// forwardHalf is forward over 16-bit x (a) and w (b). A unit of one
// sample with a bfloat16 y narrows each finished tile of its float32
// output tile into y as the GEMM goes (halfOut); others copy or round
// the whole tile afterwards (storeY).
func (j *convJob[T]) forwardHalf(u int, tile []float32) {
	p, d := &j.p, &j.d
	a, g, xo, ns, oh0, oh1 := j.forwardUnit(u)
	nb, yo := a.N, a.OffC
	col16, _, fo := j.htile.split(tile)
	c := as[float32](j.out)
	direct := c != nil && ns == 1
	var out halfOut
	if !direct {
		c, a.OffC, a.LdC = fo, 0, nb
		if j.out == nil && ns == 1 && j.ho.BF16 {
			out = halfOut{bits: j.ho.Bits, off: yo, ld: d.ohw}
		}
	}
	switch {
	case j.htile.tp > 0:
		bp := tile[:j.htile.tp]
		j.im2colPairs(any(j.kn).(*gemmKernel[float32]), words(bp), col16, j.ha.Bits[xo:], ns, oh0, oh1)
		j.gemmWPacked(a, g, as[T](bp), as[T](c), out)
	case d.pointwise && ns == 1:
		a.OffB, a.LdB = xo+oh0*p.OW, d.hw
		j.gemmWOut(a, g, operand[T]{h: j.ha.Bits, bf16: j.ha.BF16}, as[T](c), out)
	default:
		b := col16[:d.crs*nb]
		j.im2col16(b, j.ha.Bits[xo:], ns, d.crs, oh0, oh1)
		a.LdB = nb
		j.gemmWOut(a, g, operand[T]{h: b, bf16: j.ha.BF16}, as[T](c), out)
	}
	if !direct && out.bits == nil {
		j.storeY(as[T](fo), yo, ns, nb/ns)
	}
}

// gradInputHalf is gradInput over 16-bit dy (a) and w (b).
func (j *convJob[T]) gradInputHalf(u int, tile []float32) {
	p, d := &j.p, &j.d
	a, id, chans, xo, yo, ns := j.gradInputUnit(u)
	col16, colF, fo := j.htile.split(tile)
	if ns > 1 {
		nb := ns * d.ohw
		dyt := col16[:d.kg*nb]
		gatherSamples(dyt, j.ha.Bits[yo:], d, ns, d.ohw, 0)
		dy := operand[T]{h: dyt, bf16: j.ha.BF16}
		j.gradInputSamples(a, id, dy, as[T](colF[:a.M*nb]), as[T](fo), xo, chans, ns)
		return
	}
	dx, dxo := as[float32](j.out), xo
	if dx == nil {
		dx, dxo = fo, 0
	}
	dy := operand[T]{h: j.ha.Bits, bf16: j.ha.BF16}
	if d.pointwise {
		a.N, a.OffB, a.OffC, a.LdC = d.ohw, yo, dxo, d.hw
		out := halfOut{}
		if j.out == nil && j.ho.BF16 {
			out = halfOut{bits: j.ho.Bits, off: xo, ld: d.hw} // dx narrowed tile by tile
		}
		j.gemmWOut(a, id, dy, as[T](dx), out)
		if out.bits != nil {
			return
		}
	} else {
		dx = dx[dxo : dxo+chans*d.hw]
		clear(dx)
		for i := range j.bands {
			oh0, oh1 := j.bandRows(i)
			nb := (oh1 - oh0) * p.OW
			col := colF[:a.M*nb]
			a.N, a.OffB, a.LdC = nb, yo+oh0*p.OW, nb
			j.gemmW(a, id, dy, as[T](col))
			j.col2im(as[T](dx), as[T](col), nb, a.M, chans, oh0, oh1)
		}
	}
	if j.out == nil {
		narrowTo(j.ho, xo, fo[:chans*d.hw])
	}
}

// gradWeightHalf is gradWeight over 16-bit dy (a) and x (b), into the
// float32 dw (or its chunk's copy).
func (j *convJob[T]) gradWeightHalf(u int, tile []float32) {
	p, d := &j.p, &j.d
	a, dwT, ck, g, r0, r1 := j.gradWeightUnit(u)
	dw := as[float32](dwT)
	col16, _, _ := j.htile.split(tile)
	n1 := (ck + 1) * p.N / j.chunks
	for n := ck * p.N / j.chunks; n < n1; n += j.spu {
		xo := n*d.xs + g*d.cg*d.hw
		yo := n*d.ys + g*d.kg*d.ohw
		if d.pointwise && j.spu == 1 {
			a.K, a.OffA, a.OffB, a.LdB = d.ohw, yo, xo+r0*d.hw, d.hw
			GemmHalf(a, j.ha.Bits, j.hb.Bits, j.ha.BF16, j.hb.BF16, dw)
			a.Beta = 1
			continue
		}
		for i := range j.bands {
			oh0, oh1 := j.bandRows(i)
			ns := min(j.spu, n1-n)
			ga, gb := wgradTile(p, j.taps, d, j.permsOrNil(), &a, col16, j.hb.Bits[xo:], j.ha.Bits[yo:], ns, r0, r1, oh0, oh1)
			GemmHalf(a, ga, gb, j.ha.BF16, j.hb.BF16, dw)
			a.Beta = 1
		}
	}
}

// im2col16 writes the forward tile of ns samples' band [oh0, oh1) (all
// crs rows) into col: by permutation when the call has a table.
func (j *convJob[T]) im2col16(col, x []uint16, ns, crs, oh0, oh1 int) {
	j.im2colRows(col, x, ns, 0, crs, oh0, oh1)
}

// convPerms are a call's permutation tables for wgradTile: h for 16-bit
// x, f for float32.
type convPerms struct {
	h *convPerm
	f *convUnperm
}

// permsOrNil is the call's permutation tables for its weight gradient,
// nil without one.
func (j *convJob[T]) permsOrNil() *convPerms {
	switch {
	case j.usePerm:
		return &convPerms{h: &j.perm}
	case j.useUnperm:
		return &convPerms{f: &j.unperm}
	}
	return nil
}

// narrowAll rounds src into the first len(src) elements of h, split
// across the workers when it is long.
func narrowAll(h Half16, src []float32) {
	dst := h.Bits[:len(src)]
	if h.BF16 {
		F32ToBF16(dst, src)
		return
	}
	F32ToF16(dst, src)
}
