package kernels

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// The direct bfloat16 3×3 convolution: a 3×3, stride-1, pad-1 convolution
// of bfloat16 x by bfloat16 w into float32 y that reads a channel-pair
// interleaved copy of each sample (1× the input) instead of an im2col
// matrix (9×), on the 12×32 VDPBF16PS tile of the pair GEMM.
//
// Interleaved copy (xi) of one sample, in dwords: a guard of dxGuard zero
// words, then per channel pair cp a plane of (H+2)·W words and dxPad zero
// words (the plane stride ps = (H+2)·W + dxPad): row 0 and row H+1 are
// zero, row 1+oh holds x[2cp][oh][·] in the low halves and x[2cp+1][oh][·]
// in the high halves (0 past the last channel). For output pixel
// p = oh·W + ow and tap (r, s) the input word is at plane + p + r·W + s − 1,
// linear in p, so 16 consecutive pixels are one unaligned 64-byte load;
// the lanes that wrap across a row edge (ow = 0 for s = 0, ow = W−1 for
// s = 2) and the lanes past the plane are zeroed by a load mask.
//
// Packed filters (A): for each pass's range of pairs [c0, c1) and each
// tile of 12 output channels, for tap t = 3r+s and pair cp in [c0, c1),
// 12 words (w[k][2cp][t], w[k][2cp+1][t]), rows past K zero. The depth
// order (tap outer, pair inner) differs from im2col's c·9+t, so results
// are not bit-identical with Conv2dHalf's route.
//
// A tile of C is 12 output channels × two vectors of 16 pixels, each
// vector with its own base (so a tile may join two samples' planes). A
// pass adds the products of its pairs, the first storing and the later
// accumulating. Full tiles are stored straight into y; edge tiles (pixels
// past the plane, vectors of two samples, K mod 12) go through a 12×32
// scratch tile.

const (
	dxMR    = 12 // output channels per tile
	dxNR    = 32 // pixels per tile, two vectors of dxVec
	dxVec   = 16 // pixels per vector
	dxGuard = 16 // zero words before a sample's first plane
	dxPad   = 16 // zero words after each plane
	dxPairs = 32 // channel pairs per pass

	dxUnitPixels = 256 // pixels a unit of samples should hold
)

// dxKernel computes one 12×32 tile: np pairs of A's 9·np groups of 12
// words at a, the two vectors' pixels at xi[b0:] and xi[b1:] (plane
// stride ps, row stride w), masks m[:6] (m[s] for the first vector's
// tap column s, m[3+s] for the second's), into c0 (the first vector's 16
// columns) and c1 (the second's), both of row stride ldc, as mode says (0
// store, 1 accumulate).
type dxKernel func(np int, a, xi []uint32, b0, b1 int, c0, c1 []float32, ldc, mode, w, ps int, m []uint16)

// dxPlan is the layout of one direct convolution call.
type dxPlan struct {
	hw, cp, kt  int // plane size, channel pairs, tiles of 12 output channels
	ps, ss      int // plane stride and sample stride of xi, in words
	spu, units  int // samples per unit and units
	nvs, nvu    int // vectors per sample and per unit
	slots, slot int // worker slots and words per slot
	out         int // words of a slot's float32 output (16-bit y only)
	pack        int // words of packed filters
	pb          int // pairs per pass
}

// newDXPlan lays out p's call with pb pairs per pass, for a 16-bit y
// when half (each slot then holds its unit's output in float32).
func newDXPlan(p ConvArgs, pb int, half bool) dxPlan {
	var d dxPlan
	d.hw, d.cp, d.kt = p.H*p.W, (p.C+1)/2, ceilDiv(p.K, dxMR)
	d.ps = (p.H+2)*p.W + dxPad
	d.ss = dxGuard + d.cp*d.ps
	d.nvs = ceilDiv(d.hw, dxVec)
	d.spu = dxSamples(p.N, d.nvs)
	d.nvu = d.spu * d.nvs
	d.units = ceilDiv(p.N, d.spu)
	d.slots = min(Workers(), d.units)
	d.slot = roundUp(d.spu*d.ss, 16) + dxMR*dxNR + roundUp(ceilDiv(3*d.nvu+3, 2), 16)
	if half {
		d.out = roundUp(d.spu*p.K*d.hw, 16)
		d.slot += d.out
	}
	d.pack = roundUp(d.kt*dxMR*9*d.cp, 16)
	d.pb = max(1, min(pb, d.cp))
	return d
}

// dxSamples is the samples per unit for n samples of nvs vectors: enough
// for dxUnitPixels pixels, so that each tile of filters is used from L1
// by several tiles of pixels, even when nvs is odd (two vectors to a
// tile), and no more than keeps every worker busy.
func dxSamples(n, nvs int) int {
	spu := ceilDiv(dxUnitPixels, nvs*dxVec)
	if nvs%2 == 1 && spu%2 == 1 {
		spu++
	}
	spu = min(spu, ceilDiv(n, Workers()))
	if nvs%2 == 1 && spu%2 == 1 && spu < n {
		spu++
	}
	return max(1, min(spu, n))
}

// words is the call's scratch in float32 words.
func (d dxPlan) words() int { return d.pack + d.slots*d.slot }

// convDirectBF16Words is the scratch convDirectBF16 needs, in float32
// words (memory the allocator cannot see is a bug, so it is all in ws):
// the packed filters, ⌈K/12⌉·12·9·⌈C/2⌉ rounded up to 16, plus for each
// of min(Workers(), units) worker slots the interleaved copy of a unit's
// spu samples, spu·(16 + ⌈C/2⌉·((H+2)·W + 16)) rounded up to 16, a 12×32
// tile (384) and the unit's load masks, ⌈3·(nv+1)/2⌉ rounded up to 16 for
// nv = spu·⌈H·W/16⌉ vectors, and for a 16-bit y the unit's output in
// float32, spu·K·H·W rounded up to 16. spu is dxSamples(N, ⌈H·W/16⌉)
// (enough samples for 256 pixels, at most ⌈N/Workers()⌉, even where a
// sample has an odd number of vectors) and units = ⌈N/spu⌉.
func convDirectBF16Words(p ConvArgs, half bool) int { return newDXPlan(p, dxPairs, half).words() }

// convDirectBF16 is the forward convolution of bfloat16 x (NCHW) by
// bfloat16 w (KCRS) into y (NKHW: y.F in float32, else y.H, each output
// rounded once from float32) for a 3×3, stride-1, pad-1, undilated,
// ungrouped p, reading x directly (no im2col). ws holds at least
// convDirectBF16Words(p, y.F == nil) words. Units of samples run across
// the workers, each claiming the next one as it finishes. On a CPU
// without AVX512_BF16 it runs the Go twin.
func convDirectBF16(p ConvArgs, y ConvOut, x, w []uint16, ws []float32) {
	convDirectWith(p, y, x, w, ws, dxBest(), dxPairs)
}

// checkDirect panics unless p is a convolution convDirectBF16 takes and
// the operands and ws are long enough.
func checkDirect(p ConvArgs, d dxPlan, y ConvOut, x, w []uint16, ws []float32) {
	if p.R != 3 || p.S != 3 || p.StrideH != 1 || p.StrideW != 1 || p.PadH != 1 || p.PadW != 1 ||
		p.DilH != 1 || p.DilW != 1 || p.Groups != 1 || p.OH != p.H || p.OW != p.W ||
		p.N < 1 || p.C < 1 || p.K < 1 || p.H < 1 || p.W < 1 {
		panic(fmt.Sprintf("kernels: convDirectBF16 takes 3x3 stride-1 pad-1 convolutions, got %+v", p))
	}
	if len(ws) < d.words() {
		panic(fmt.Sprintf("kernels: convDirectBF16: ws holds %d float32 words, needs %d (convDirectBF16Words)", len(ws), d.words()))
	}
	ny := len(y.F)
	if y.F == nil {
		ny = len(y.H.Bits)
	}
	if len(x) < p.N*p.C*d.hw || len(w) < p.K*p.C*9 || ny < p.N*p.K*d.hw {
		panic(fmt.Sprintf("kernels: convDirectBF16: x %d, w %d, y %d elements, need %d, %d, %d",
			len(x), len(w), ny, p.N*p.C*d.hw, p.K*p.C*9, p.N*p.K*d.hw))
	}
}

// dxJob is one call's state, pooled so a warm call does not allocate.
type dxJob struct {
	p    ConvArgs
	d    dxPlan
	y    []float32 // float32 output, or nil
	yh   Half16    // 16-bit output where y is nil
	x, w []uint16
	a    []uint32
	ws   []float32
	kern dxKernel
	run  func(lo, hi int) // the job's slots method, bound once
	pack func(lo, hi int) // its packTiles method, bound once
	next atomic.Int64     // the next unit to claim
}

var dxJobs freeList[dxJob]

// convDirectWith is convDirectBF16 with kernel kern and pb pairs per
// pass.
func convDirectWith(p ConvArgs, y ConvOut, x, w []uint16, ws []float32, kern dxKernel, pb int) {
	d := newDXPlan(p, pb, y.F == nil)
	checkDirect(p, d, y, x, w, ws)
	j := dxJobs.get()
	if j.run == nil {
		j.run, j.pack = j.slots, j.packTiles
	}
	j.p, j.d, j.y, j.yh, j.x, j.w, j.ws, j.kern = p, d, y.F, y.H, x, w, ws, kern
	j.a = words(ws[:d.pack])
	j.next.Store(0)
	ParallelFor(d.kt, 1, j.pack)
	ParallelFor(d.slots, 1, j.run)
	j.y, j.yh, j.x, j.w, j.a, j.ws, j.kern = nil, Half16{}, nil, nil, nil, nil, nil
	dxJobs.put(j)
}

// slots runs worker slots [lo, hi): each claims the next unit until
// none is left, so a worker that starts late or runs slow takes fewer
// (units are independent: the result does not depend on who runs one).
func (j *dxJob) slots(lo, hi int) {
	d := &j.d
	for s := lo; s < hi; s++ {
		sl := j.ws[d.pack+s*d.slot : d.pack+(s+1)*d.slot]
		for u := int(j.next.Add(1) - 1); u < d.units; u = int(j.next.Add(1) - 1) {
			j.unit(u, sl)
		}
	}
}

// packTiles packs the filters of output-channel tiles [lo, hi) into j.a
// (layout in the overview): per pass, tile kt's block starts after the
// earlier passes' ⌈K/12⌉·108·c0 words and the pass's earlier tiles.
func (j *dxJob) packTiles(lo, hi int) {
	p, d := &j.p, &j.d
	for c0 := 0; c0 < d.cp; c0 += d.pb {
		np := min(d.pb, d.cp-c0)
		for kt := lo; kt < hi; kt++ {
			blk := j.a[(d.kt*c0+kt*np)*9*dxMR:][:9*np*dxMR]
			for r := range dxMR {
				packRow(blk[r:], j.w, *p, kt*dxMR+r, c0, np)
			}
		}
	}
}

// packRow writes filter k's pairs [c0, c0+np) into its row of a tile's
// block (12-word steps from blk[0]), zero past K and past C.
func packRow(blk []uint32, w []uint16, p ConvArgs, k, c0, np int) {
	st := np * dxMR // one tap's step in the block
	_ = blk[8*st+(np-1)*dxMR]
	if k >= p.K {
		for cp := range np {
			for t := range 9 {
				blk[t*st+cp*dxMR] = 0
			}
		}
		return
	}
	whole := min(np, p.C/2-c0) // pairs with both channels
	if whole > 0 {
		dxPackPairs(blk, w[(k*p.C+2*c0)*9:], whole, st)
	}
	for cp := c0 + whole; cp < c0+np; cp++ { // the odd last channel
		lo := w[(k*p.C+2*cp)*9:][:9]
		for t, v := range lo {
			blk[t*st+(cp-c0)*dxMR] = uint32(v)
		}
	}
}

// packPairsGo is dxPackPairs in Go: n pairs of one filter's two channels
// (18 words each at w) into blk[t·st + 12·pair].
func packPairsGo(blk []uint32, w []uint16, n, st int) {
	for cp := range n {
		lo, hi := w[18*cp:][:9], w[18*cp+9:][:9]
		for t, v := range lo {
			blk[t*st+cp*dxMR] = uint32(v) | uint32(hi[t])<<16
		}
	}
}

// interleaveDX writes sample x (C·H·W) into xi (d.ss words, layout in the
// overview).
func interleaveDX(xi []uint32, x []uint16, p ConvArgs, d dxPlan) {
	clear(xi[:dxGuard])
	for cp := range d.cp {
		pl := xi[dxGuard+cp*d.ps : dxGuard+(cp+1)*d.ps]
		clear(pl[:p.W])
		lo := x[2*cp*d.hw : (2*cp+1)*d.hw]
		body := pl[p.W : p.W+d.hw]
		if 2*cp+1 < p.C {
			hi := x[(2*cp+1)*d.hw : (2*cp+2)*d.hw]
			for i, v := range lo {
				body[i] = uint32(v) | uint32(hi[i])<<16
			}
		} else {
			for i, v := range lo {
				body[i] = uint32(v)
			}
		}
		clear(pl[p.W+d.hw:])
	}
}

// dxMasks writes the load masks of vector v (pixels p0 = 16v…): for tap
// column s, lane i is set when pixel p0+i is in the plane and its tap
// does not wrap across a row edge.
func dxMasks(m []uint16, p0 int, p ConvArgs, hw int) {
	var m0, m1, m2 uint16
	ow := p0 % p.W
	for i := range dxVec {
		if p0+i < hw {
			m1 |= 1 << i
			if ow != 0 {
				m0 |= 1 << i
			}
			if ow != p.W-1 {
				m2 |= 1 << i
			}
		}
		if ow++; ow == p.W {
			ow = 0
		}
	}
	m[0], m[1], m[2] = m0, m1, m2
}

// unit runs unit u (samples u·spu… of x) in slot scratch sl.
func (j *dxJob) unit(u int, sl []float32) {
	p, d := &j.p, &j.d
	n0 := u * d.spu
	ns := min(d.spu, p.N-n0)
	xi := words(sl[:d.spu*d.ss])
	tile := sl[roundUp(d.spu*d.ss, 16):][:dxMR*dxNR]
	mw := sl[roundUp(d.spu*d.ss, 16)+dxMR*dxNR : len(sl)-d.out]
	masks := halfWords(mw)[:3*d.nvu+3]
	o := dxOut{y: j.y, n0: n0}
	if j.y == nil { // the unit's samples in float32, rounded into yh at the end
		o = dxOut{y: sl[len(sl)-d.out:], n0: 0}
	}
	for i := range ns {
		interleaveDX(xi[i*d.ss:(i+1)*d.ss], j.x[(n0+i)*p.C*d.hw:], *p, *d)
	}
	nv := ns * d.nvs
	for v := range nv {
		dxMasks(masks[3*v:], (v%d.nvs)*dxVec, *p, d.hw)
	}
	clear(masks[3*nv : 3*nv+3]) // the partner of an odd last vector
	for c0 := 0; c0 < d.cp; c0 += d.pb {
		np := min(d.pb, d.cp-c0)
		mode := min(c0, 1)
		for v := 0; v < nv; v += 2 {
			for kt := range d.kt {
				a := j.a[(d.kt*c0+kt*np)*9*dxMR:][:9*np*dxMR]
				j.tile(a, xi[c0*d.ps:], masks, tile, o, kt, v, min(v+1, nv-1), np, mode, v+1 < nv)
			}
		}
	}
	if j.y == nil {
		narrowTo(j.yh, n0*p.K*d.hw, o.y[:ns*p.K*d.hw])
	}
}

// dxOut is where a unit writes its output: y, whose sample n0 is the
// unit's first (all of y, or the unit's own float32 buffer from sample 0).
type dxOut struct {
	y  []float32
	n0 int
}

// tile runs the kernel for output channels kt·12… over vectors v0 and v1
// of the unit (two is false when v1 only repeats v0) and writes y.
func (j *dxJob) tile(a, xi []uint32, masks []uint16, tile []float32, o dxOut, kt, v0, v1, np, mode int, two bool) {
	p, d := &j.p, &j.d
	m := masks[3*v0 : 3*v0+6] // v1 is v0+1, or v0 with its masks unused
	b0 := (v0/d.nvs)*d.ss + dxGuard + (v0%d.nvs)*dxVec
	b1 := (v1/d.nvs)*d.ss + dxGuard + (v1%d.nvs)*dxVec
	k0 := kt * dxMR
	if two && k0+dxMR <= p.K && dxFull(d, v0) && dxFull(d, v1) {
		j.kern(np, a, xi, b0, b1, j.yAt(o, k0, v0), j.yAt(o, k0, v1), d.hw, mode, p.W, d.ps, m)
		return
	}
	j.kern(np, a, xi, b0, b1, tile, tile[dxVec:], dxNR, 0, p.W, d.ps, m)
	j.spill(tile, o, k0, v0, 0, mode)
	if two {
		j.spill(tile, o, k0, v1, dxVec, mode)
	}
}

// dxFull reports whether vector v of a unit lies wholly in its plane.
func dxFull(d *dxPlan, v int) bool { return (v%d.nvs+1)*dxVec <= d.hw }

// yAt is o's y from output channel k0 at vector v of the unit.
func (j *dxJob) yAt(o dxOut, k0, v int) []float32 {
	d := &j.d
	n, p0 := o.n0+v/d.nvs, (v%d.nvs)*dxVec
	return o.y[(n*j.p.K+k0)*d.hw+p0:]
}

// spill writes the valid part of the scratch tile's columns [c, c+16)
// (vector v of the unit) into o's y, storing or accumulating as mode says.
func (j *dxJob) spill(tile []float32, o dxOut, k0, v, c, mode int) {
	p, d := &j.p, &j.d
	n, p0 := o.n0+v/d.nvs, (v%d.nvs)*dxVec
	cols := min(dxVec, d.hw-p0)
	for r := range min(dxMR, p.K-k0) {
		src := tile[r*dxNR+c : r*dxNR+c+cols]
		dst := o.y[(n*p.K+k0+r)*d.hw+p0:][:cols]
		if mode == 0 {
			copy(dst, src)
			continue
		}
		for i, v := range src {
			dst[i] += v
		}
	}
}

// convDXGo is the Go twin of the direct kernel (dxKernel), bit for bit:
// each lane sums taps r, then s, then pairs, in VDPBF16PS's arithmetic.
func convDXGo(np int, a, xi []uint32, b0, b1 int, c0, c1 []float32, ldc, mode, w, ps int, m []uint16) {
	for row := range dxMR {
		for j := range dxNR {
			b, mk, c, cj := b0+j, m[:3], c0, j
			if j >= dxVec {
				b, mk, c, cj = b1+j-dxVec, m[3:], c1, j-dxVec
			}
			lane := uint16(1) << (j % dxVec)
			var acc float32
			for r := range 3 {
				for s := range 3 {
					t := 3*r + s
					for cp := range np {
						var bv uint32
						if mk[s]&lane != 0 {
							bv = xi[b+cp*ps+r*w+s-1]
						}
						acc = dotBF16Pair(acc, a[(t*np+cp)*dxMR+row], bv)
					}
				}
			}
			if mode == 0 {
				c[row*ldc+cj] = acc
			} else {
				c[row*ldc+cj] += acc
			}
		}
	}
}

// halfWords views float32 scratch as twice as many 16-bit words.
func halfWords(s []float32) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(s))), 2*len(s))
}

// dxBest is the assembly kernel where there is one, else the Go twin.
func dxBest() dxKernel {
	if k := dxAsm(); k != nil {
		return k
	}
	return convDXGo
}
