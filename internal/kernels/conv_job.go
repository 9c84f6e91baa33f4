package kernels

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// The convolution driver: units, bands, blocks and tiles (see conv.go).

// ConvKind names one of the three convolution kernels, whose workspaces
// ConvWorkspace sizes.
type ConvKind int

// The kernels.
const (
	ConvForward    ConvKind = iota // Conv2d
	ConvGradInput                  // Conv2dGradInput
	ConvGradWeight                 // Conv2dGradWeight
)

// Tuning (in elements, or multiply-adds for convPart):
//
//   - A band has the most whole output rows whose tile holds at most
//     convTile elements (256 KiB of float32, half a Zen 3 core's L2), but
//     at least convMinCols columns (or the whole sample): every GEMM packs
//     all of its A (the filters, or dy for the weight gradient) for one
//     band, so narrow bands would pack it over and over, and the weight
//     gradient's products would be too short (their K is the band).
//   - A convolution is cut into at least convUnits units where its shape
//     allows, so that up to convUnits/2 workers balance their load, and
//     takes a second worker only from convPart multiply-adds per worker
//     (waking a parked worker costs 100–150 µs; see gemmPart).
//   - A forward or input-gradient unit over planes of fewer than
//     convMinCols outputs (one band) takes several samples, side by side
//     in its tile (the input gradient gathers their dy rows into it),
//     up to convMinCols columns but no fewer units than convUnits where
//     the batch allows: one GEMM per sample would be too narrow for the
//     micro-kernel (a 4×4 plane fills half of its 32 columns). Pointwise
//     forward and input-gradient units do so below convDirectCols
//     outputs (weight gradients below convMinCols, as any other).
//   - Such an input-gradient unit's block of channels has packed filters
//     of about convFilters bytes (at least convMinRows rows), and the
//     units of one block come one after another: the filters of all the
//     channels would not stay in L2 across a unit's narrow GEMMs. Not for
//     16-bit operands: each block packs the unit's dy into pairs again,
//     which costs more there than streaming the filters (measured with
//     BenchmarkConvVsGemmResNet50).
//   - Likewise the weight gradient's GEMMs over such planes each take up
//     to convMinCols columns of several samples (of one chunk) as their
//     depth, instead of one plane's few: every GEMM reads and writes its
//     whole block of dw.
//   - The weight gradient splits the samples into chunks, each summed into
//     its own copy of dw, when dw has at most convDWSmall elements; else it
//     splits dw's columns (im2col rows) into convWGradBlocks blocks of at
//     least convMinDW, because every block packs the same rows of dy again
//     (the GEMM's A); half as many where its GEMMs take several samples
//     as depth, whose dy rows each block also gathers first (the 16×16 →
//     8×8 stride-2 layer of ResNet-18 went from 0.65 to 0.81 of a GEMM in
//     F32, 0.55 to 0.69–0.74 in BF16 on Zen 5; the block count changes
//     no bit, TestConv2dGradWeightBlocks).
//
// These depend on nothing but constants and the convolution, so neither
// do the results. (Variables so that the tests can send small
// convolutions down every path.)
var (
	convTile    = 1 << 16
	convMinCols = 256
	convPart    = gemmPart
	convDWSmall = 1 << 16
	// convWGradBlocks is the blocks of dw's columns a weight gradient aims at.
	convWGradBlocks = convUnits
	convFilters     = 1 << 19
	convMinRows     = 120
)

const (
	convUnits = 8
	convMinDW = 128
	// convPanel is the rows of the micro-kernels' panels (mr: 12, or 6
	// for the AVX2 kernels); filterBlock cuts whole panels.
	convPanel = 12
)

// convDirectCols: a pointwise unit (any of the three kernels) whose planes
// have fewer outputs than this (two of the 32-column kernel's panels)
// gathers several samples into its tile like any other. (A variable so
// that the tests can compare both paths.)
var convDirectCols = 64

// filterBlock returns the channels of an input-gradient block whose
// packed filters (channels·rs rows by kg, of size bytes each) take about
// convFilters bytes, but at least convMinRows rows, in whole panels: over
// small planes a unit's GEMMs are narrow, and the workers' next units
// (over the next samples) reuse the block from L2 instead of streaming
// all the filters again, while each GEMM still has rows enough to pay
// for packing its dy.
func filterBlock(rs, kg, size int) int {
	rows := max(min(convMinRows, convFilters), convFilters/max(kg*size, 1))
	if rows >= convPanel {
		rows -= rows % convPanel
	}
	return max(1, rows/rs)
}

// convJob is one kernel call in flight; jobs are reused, and phase (the
// method value handed to ParallelFor) is built once per job, so a call in
// steady state allocates nothing.
type convJob[T float32 | float64] struct {
	convPlan
	p ConvArgs
	d convDims
	// forward: out y, a x, b w; input gradient: out dx, a dy, b w; weight
	// gradient: out dw, a dy, b x.
	out, a, b []T

	taps   convTaps
	part   []T // weight gradient: the dw of chunks 1, 2, … (chunk 0 sums into dw)
	tiles  []T // the workers' tiles, stride apart (conv_ws.go)
	stride int

	// 16-bit calls (conv_half.go; T is float32): a and b as 16-bit, the
	// 16-bit output when out is nil.
	ha, hb, ho Half16

	// Forward and input gradient: every filter matrix packed once per
	// call (pack_whole.go) for the kernel kn its GEMMs run, aper elements
	// each.
	kn   *gemmKernel[T]
	jobs *freeList[gemmJob[T]]
	// A 16-bit forward or weight-gradient call over small planes: im2col
	// by permutation (conv_perm.go), perm built for the call.
	perm    convPerm
	usePerm bool
	// A float32 call over small planes, or a 16-bit input gradient: im2col
	// or col2im by permutation (conv_unperm.go).
	unperm    convUnperm
	useUnperm bool
	apack     []T
	aper      int
	// packFilters' split: panels per filter matrix and packPanels as a
	// func value kept with the job (no allocation).
	packPer   int
	packPhase func(lo, hi int)

	next  atomic.Int64
	phase func(lo, hi int)
}

// convBuf is a Go-heap workspace, for calls that pass none (convScratch).
type convBuf struct{ b []byte }

var (
	convJobs32 freeList[convJob[float32]]
	convJobs64 freeList[convJob[float64]]
	convBufs   freeList[convBuf]
)

// runConvJob runs one of the three kernels (out, a, b as in convJob).
func runConvJob[T Float](kind ConvKind, p ConvArgs, out, a, b, ws []T) {
	var z T
	if unsafe.Sizeof(z) == 4 {
		if q, l, ok := useWino(kind, p); ok {
			runWino(kind, p, q, l, as[float32](out), as[float32](a), as[float32](b), as[float32](ws))
			return
		}
		j := convJobs32.get()
		j.run(kind, p, as[float32](out), as[float32](a), as[float32](b), as[float32](ws))
		convJobs32.put(j)
		return
	}
	j := convJobs64.get()
	j.run(kind, p, as[float64](out), as[float64](a), as[float64](b), as[float64](ws))
	convJobs64.put(j)
}

func (j *convJob[T]) run(kind ConvKind, p ConvArgs, out, a, b, ws []T) {
	if j.phase == nil {
		j.phase = j.work
	}
	j.convPlan = convPlan{kind: kind, half: j.half, narrow: j.half && out == nil, size: j.filterSize()}
	j.p, j.d = p, p.dims()
	j.out, j.a, j.b = out, a, b
	defer j.drop()
	d := &j.d
	size := p.K * d.crs // dw
	if kind == ConvGradWeight && (p.N == 0 || d.ohw == 0) {
		if out == nil {
			clear(j.ho.Bits[:size])
		}
		clear(out[:min(len(out), size)])
		return
	}
	j.plan(&j.p, d)
	if j.units == 0 {
		return
	}
	j.takePairs()
	lay := convLayoutFor(kind, p, j.half, j.filterSize())
	ws, buf := convScratch(kind.String(), ws, lay.total())
	j.carve(lay, ws)
	j.taps.set(&j.p)
	j.usePerm = j.half && kind != ConvGradInput && j.bands == 1 && j.perm.build(&j.p)
	j.useUnperm = (kind == ConvGradInput || !j.half) && j.filterSize() == 4 && j.bands == 1 &&
		j.unperm.build(&j.p, kind != ConvGradInput)
	// A 16-bit dw is summed in a float32 copy, after the chunks' copies.
	if kind == ConvGradWeight && out == nil {
		j.out, j.part = j.part[(j.chunks-1)*size:][:size], j.part[:(j.chunks-1)*size]
	}
	if kind != ConvGradWeight {
		j.packFilters()
	}
	work := p.N * p.K * d.crs * d.ohw
	parts := max(1, min(Workers(), j.units, work/max(convPart, 1), ConvSlots()))
	j.next.Store(0)
	if parts == 1 {
		j.work(0, 1)
	} else {
		ParallelFor(parts, 1, j.phase)
	}
	for k := range j.chunks - 1 { // in chunk order
		addTo(j.out[:size], j.part[k*size:(k+1)*size])
	}
	if kind == ConvGradWeight && out == nil {
		narrowAll(j.ho, as[float32](j.out[:size]))
	}
	if buf != nil {
		convBufs.put(buf)
	}
}

// carve cuts ws (aligned, laid out as lay) into the call's packed
// filters, copies of dw and tiles.
func (j *convJob[T]) carve(lay convLayout, ws []T) {
	if j.tile > lay.stride {
		panic(fmt.Sprintf("kernels.%s: tile of %d elements exceeds its slot of %d", j.kind, j.tile, lay.stride))
	}
	j.apack, ws = ws[:lay.filters], ws[lay.filters:]
	j.part, ws = ws[:lay.parts], ws[lay.parts:]
	j.tiles, j.stride = ws[:lay.slots*lay.stride], lay.stride
}

// drop lets go of the caller's memory once the call is done.
func (j *convJob[T]) drop() {
	j.out, j.a, j.b, j.part, j.tiles, j.apack = nil, nil, nil, nil, nil, nil
	j.kn, j.jobs = nil, nil
}

// filterSize is the bytes of one filter element.
func (j *convJob[T]) filterSize() int {
	var z T
	return int(unsafe.Sizeof(z))
}

func (j *convJob[T]) claim() int {
	if u := int(j.next.Add(1) - 1); u < j.units {
		return u
	}
	return -1
}

// work claims and runs units until none is left; slot (lo) numbers the
// worker, which picks its tile.
func (j *convJob[T]) work(slot, _ int) {
	var tile []T
	if j.tile > 0 {
		tile = j.tiles[slot*j.stride:][:j.tile]
	}
	for u := j.claim(); u >= 0; u = j.claim() {
		if j.half {
			j.halfUnit(u, as[float32](tile))
			continue
		}
		switch j.kind {
		case ConvForward:
			j.forward(u, tile)
		case ConvGradInput:
			j.gradInput(u, tile)
		default:
			j.gradWeight(u, tile)
		}
	}
}

// bandRows returns band i's output rows [oh0, oh1).
func (j *convJob[T]) bandRows(i int) (oh0, oh1 int) {
	oh0 = i * j.band
	return oh0, min(j.p.OH, oh0+j.band)
}

// forwardUnit returns unit u's GEMM, y_band (kg × nb) = w_g (kg × crs) ·
// col_band (crs × nb) over its ns samples' bands side by side, B's offset
// and stride left to the caller (and C's when ns > 1: y's offset is
// OffC), with its group, x's offset (of its first sample), ns and its
// band of output rows [oh0, oh1).
func (j *convJob[T]) forwardUnit(u int) (a GemmArgs, g, xo, ns, oh0, oh1 int) {
	p, d := &j.p, &j.d
	n := u / (p.Groups * j.bands) * j.spu
	ns = min(j.spu, p.N-n)
	g = u / j.bands % p.Groups
	oh0, oh1 = j.bandRows(u % j.bands)
	a = GemmArgs{M: d.kg, N: ns * (oh1 - oh0) * p.OW, K: d.crs, Alpha: 1, OffA: g * d.wg, LdA: d.crs,
		OffC: n*d.ys + g*d.kg*d.ohw + oh0*p.OW, LdC: d.ohw}
	return a, g, n*d.xs + g*d.cg*d.hw, ns, oh0, oh1
}

// forward computes one band of one group of y for the unit's samples.
func (j *convJob[T]) forward(u int, tile []T) {
	p, d := &j.p, &j.d
	a, g, xo, ns, oh0, oh1 := j.forwardUnit(u)
	if d.pointwise && ns == 1 {
		a.OffB, a.LdB = xo+oh0*p.OW, d.hw
		j.gemmW(a, g, operand[T]{f: j.a}, j.out)
		return
	}
	col, stage := tile[:j.colSize(a.N)], j.stage(tile)
	if ns == 1 {
		j.forwardGemm(a, g, col, stage, j.a[xo:], ns, oh0, oh1, j.out)
		return
	}
	fo, yo := tile[len(col):][:d.kg*a.N], a.OffC
	a.OffC, a.LdC = 0, a.N
	j.forwardGemm(a, g, col, stage, j.a[xo:], ns, oh0, oh1, fo)
	j.storeY(fo, yo, ns, a.N/ns)
}

// storeY writes a forward unit's output tile fo (kg rows of ns samples'
// cols outputs side by side) into y from offset yo (its first sample's):
// copied, or rounded to a 16-bit y.
func (j *convJob[T]) storeY(fo []T, yo, ns, cols int) {
	d := &j.d
	narrow := j.half && j.out == nil
	for s := range ns {
		for k := range d.kg {
			src, at := fo[(k*ns+s)*cols:][:cols], yo+s*d.ys+k*d.ohw
			if narrow {
				narrowTo(j.ho, at, as[float32](src))
				continue
			}
			copy(j.out[at:at+cols], src)
		}
	}
}

// gradInputUnit returns unit u's GEMM, col (block rows × nb) = w_g[:,
// block]ᵀ · dy_band (kg × nb), its N, B's offset and C left to the caller,
// with its filter matrix (packFilters), its channels, dx's offset and
// dy's (of its first sample), and its samples' count ns.
func (j *convJob[T]) gradInputUnit(u int) (a GemmArgs, id, chans, xo, yo, ns int) {
	p, d := &j.p, &j.d
	sg := ceilDiv(p.N, j.spu) // sample groups, innermost: a worker's next unit reuses its filters
	n, g, blk := u%sg*j.spu, u/sg/j.blocks, u/sg%j.blocks
	ns = min(j.spu, p.N-n)
	c0 := blk * j.block
	chans = min(d.cg, c0+j.block) - c0
	rs := p.R * p.S
	a = GemmArgs{TransA: true, M: chans * rs, K: d.kg, Alpha: 1, OffA: g*d.wg + c0*rs, LdA: d.crs, LdB: d.ohw}
	return a, g*j.blocks + blk, chans, n*d.xs + (g*d.cg+c0)*d.hw, n*d.ys + g*d.kg*d.ohw, ns
}

// gradInput computes one block of channels of one sample and group of dx.
func (j *convJob[T]) gradInput(u int, tile []T) {
	p, d := &j.p, &j.d
	a, id, chans, xo, yo, ns := j.gradInputUnit(u)
	if ns > 1 {
		nb := ns * d.ohw
		dyt := tile[j.block*p.R*p.S*nb:][:d.kg*nb]
		gatherSamples(dyt, j.a[yo:], d, ns, d.ohw, 0)
		j.gradInputSamples(a, id, operand[T]{f: dyt}, tile[:a.M*nb], nil, xo, chans, ns)
		return
	}
	if d.pointwise {
		a.N, a.OffB, a.OffC, a.LdC = d.ohw, yo, xo, d.hw
		j.gemmW(a, id, operand[T]{f: j.a}, j.out)
		return
	}
	dx := j.out[xo : xo+chans*d.hw]
	clear(dx)
	for i := range j.bands {
		oh0, oh1 := j.bandRows(i)
		nb := (oh1 - oh0) * p.OW
		col := tile[:a.M*nb]
		a.N, a.OffB, a.LdC = nb, yo+oh0*p.OW, nb
		j.gemmW(a, id, operand[T]{f: j.a}, col)
		j.col2im(dx, col, nb, a.M, chans, oh0, oh1)
	}
}

// gradInputSamples finishes an input-gradient unit over ns > 1 samples
// (one band each): col (a.M × ns·OH·OW) = w_g[:, block]ᵀ · dy, dy the
// samples' rows side by side, then each sample's block of dx (from xo on,
// chans channels; in fo, then rounded, for a 16-bit dx) is cleared and
// its columns of col added in.
func (j *convJob[T]) gradInputSamples(a GemmArgs, id int, dy operand[T], col, fo []T, xo, chans, ns int) {
	p, d := &j.p, &j.d
	nb := ns * d.ohw
	a.N, a.OffB, a.LdB, a.OffC, a.LdC = nb, 0, nb, 0, nb
	j.gemmW(a, id, dy, col)
	for s := range ns {
		at := xo + s*d.xs
		dx := j.out
		if dx == nil {
			dx, at = fo, 0
		}
		dx = dx[at : at+chans*d.hw]
		if d.pointwise { // each entry is one dx element: copied, not added
			for c := range chans {
				copy(dx[c*d.hw:(c+1)*d.hw], col[c*nb+s*d.ohw:])
			}
		} else {
			clear(dx)
			j.col2im(dx, col[s*d.ohw:], nb, a.M, chans, 0, p.OH)
		}
		if j.out == nil {
			narrowTo(j.ho, xo+s*d.xs, as[float32](dx))
		}
	}
}

// col2im adds the tile's rows [0, rows) of chans channels (ld apart) of
// band [oh0, oh1) into dx, cleared, as col2imTile does; by permutation,
// overwriting dx, when the call has a table (then the band is the whole
// plane, and the planes come out the same).
func (j *convJob[T]) col2im(dx, col []T, ld, rows, chans, oh0, oh1 int) {
	if j.useUnperm {
		j.unperm.col2im(as[float32](dx), as[float32](col), ld, chans, j.p.R*j.p.S)
		return
	}
	col2imTile(&j.p, j.taps, dx, col, ld, rows, oh0, oh1)
}

// gradWeightUnit returns unit u's GEMM, dw[:, r0:r1] (kg × rows) +=
// dy_band (kg × nb) · col_band[r0:r1]ᵀ, its K and B left to the caller,
// with the dw it sums into (dw, or its chunk's copy), its chunk, group and
// rows of the im2col matrix [r0, r1).
func (j *convJob[T]) gradWeightUnit(u int) (a GemmArgs, dw []T, ck, g, r0, r1 int) {
	p, d := &j.p, &j.d
	ck, u = u/(p.Groups*j.blocks), u%(p.Groups*j.blocks)
	g, blk := u/j.blocks, u%j.blocks
	r0, r1 = blk*j.block, min(d.crs, (blk+1)*j.block)
	dw = j.out
	if ck > 0 {
		size := p.K * d.crs
		dw = j.part[(ck-1)*size : ck*size]
	}
	a = GemmArgs{TransB: true, M: d.kg, N: r1 - r0, Alpha: 1, LdA: d.ohw, OffC: g*d.wg + r0, LdC: d.crs}
	return a, dw, ck, g, r0, r1
}

// gradWeight computes one block of columns of one group's dw (or of its
// chunk's copy of dw), summing over the chunk's samples (spu at a time)
// and bands in order.
func (j *convJob[T]) gradWeight(u int, tile []T) {
	p, d := &j.p, &j.d
	a, dw, ck, g, r0, r1 := j.gradWeightUnit(u)
	n1 := (ck + 1) * p.N / j.chunks
	for n := ck * p.N / j.chunks; n < n1; n += j.spu {
		xo := n*d.xs + g*d.cg*d.hw
		yo := n*d.ys + g*d.kg*d.ohw
		if d.pointwise && j.spu == 1 {
			a.K, a.OffA, a.OffB, a.LdB = d.ohw, yo, xo+r0*d.hw, d.hw
			Gemm(a, j.a, j.b, dw)
			a.Beta = 1
			continue
		}
		for i := range j.bands {
			oh0, oh1 := j.bandRows(i)
			j.wgradGemm(a, tile, dw, j.b[xo:], j.a[yo:], min(j.spu, n1-n), r0, r1, oh0, oh1)
			a.Beta = 1
		}
	}
}

// wgradTile builds the operands of a weight-gradient GEMM over ns samples'
// band [oh0, oh1) side by side, x and dy starting at the first sample's
// group: in tile, rows [r0, r1) of the im2col matrix (B) and, when ns > 1,
// dy's kg rows (A; else A is dy itself). It sets a's K, A's offset and
// stride and B's. Non-nil perms (one band) build the im2col rows by
// permutation: perms.h for 16-bit x, perms.f for float32.
func wgradTile[E convElem](p *ConvArgs, taps convTaps, d *convDims, perms *convPerms, a *GemmArgs, tile, x, dy []E, ns, r0, r1, oh0, oh1 int) (ga, gb []E) {
	cols := (oh1 - oh0) * p.OW
	nb := ns * cols
	gb = tile[:(r1-r0)*nb]
	c16, is16 := any(gb).([]uint16)
	c32, is32 := any(gb).([]float32)
	switch {
	case perms != nil && is16:
		perms.h.im2col(c16, any(x).([]uint16), nb, d.xs, ns, p.R*p.S, r0, r1)
	case perms != nil && is32:
		perms.f.im2col(c32, any(x).([]float32), nb, d.xs, ns, p.R*p.S, r0, r1)
	default:
		im2colSamples(p, taps, d, gb, x, ns, r0, r1, oh0, oh1)
	}
	a.K, a.OffA, a.LdA, a.OffB, a.LdB = nb, oh0*p.OW, d.ohw, 0, nb
	if ns == 1 {
		return dy, gb
	}
	ga = tile[(r1-r0)*nb:][:d.kg*nb]
	gatherSamples(ga, dy, d, ns, cols, oh0*p.OW)
	a.OffA, a.LdA = 0, nb
	return ga, gb
}
