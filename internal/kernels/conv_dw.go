package kernels

import (
	"fmt"
	"sync/atomic"

	"github.com/headroom-ml/headroom/dtype"
)

// The direct bfloat16 weight gradient of a 3×3, stride-1, pad-1
// convolution, without im2col: dw[k][c][t] = Σ over the batch and the
// pixels of dy[n][k][p]·x[n][c][p+off(t)].
//
// VDPBF16PS sums pairs along the depth of a product, and the depth of a
// weight gradient is the pixels of every sample. Pairing two neighbouring
// pixels breaks under the taps' odd shifts, so the pairs here are two
// samples at the same pixel: a tap's shift moves both halves alike. The
// batch is taken m sample pairs at a time (a chunk); for each pair of a
// chunk the workers first write
//
//   - xs: per block of 32 input channels, the pair's planes padded by one
//     pixel all round ((H+2)·(W+2) positions) plus a guard position at each
//     end, position-major with the 32 channels' (n, n+1) words minor: a
//     run of positions from any start is a B panel of the pair kernel;
//   - dys: per block of 12 output channels, dy's H padded rows ((W+2)
//     positions, the pad columns zero) with the 12 channels' words minor:
//     an A panel;
//
// and then share out the 12×32 output tiles (a block of each): the weight
// gradient of tap t is the product of dys's depth run with xs's run
// shifted by the tap's offset (t/3−1)·(W+2) + t%3−1, accumulated by the
// pair kernel into one float32 sum laid out [k][t][c], pair by pair in
// batch order over depth chunks of dwKC positions (A's and B's chunks,
// 9 KiB and 24 KiB, stay in L1 across the nine taps). The pad columns of
// dy are zero, so the positions they stand for add nothing: the depth is
// H·(W+2) positions per pair, W+2 of every W real. Each sum sees the same
// additions in the same order whatever m and the worker count, so the
// bits depend on neither. The sums are finally written to dw (permuted to
// [k][c][t], rounded once when dw is 16-bit).
//
// Scratch, in float32 words (dwPlan): 9·Kp·Cp sums and, per pair of a
// chunk, Cb·((H+2)·(W+2)+2)·32 for xs and Kb·H·(W+2)·12 for dys, with
// Kb = ⌈K/12⌉, Cb = ⌈C/32⌉, Kp = 12·Kb, Cp = 32·Cb; m is as many pairs as
// the workspace holds (the route runs inside the im2col route's workspace,
// memory first, and only where one pair fits).

// dwKC is the depth chunk, in positions.
const dwKC = 192

// dwPlan is a direct weight gradient's layout.
type dwPlan struct {
	wp, pos, d     int // padded row, xs positions per block, depth per pair
	kb, cb, kp, cp int // output and input channel blocks, rounded counts
	acc, xs, dys   int // words of the sums, of a pair's xs and dys
	pairs, m       int // sample pairs, pairs per chunk
}

// newDWPlan lays p out in ws words (m = 0 when not even one pair fits).
func newDWPlan(p ConvArgs, ws int) dwPlan {
	d := dwPlan{wp: p.W + 2, kb: ceilDiv(p.K, 12), cb: ceilDiv(p.C, 32), pairs: ceilDiv(p.N, 2)}
	d.pos, d.d = (p.H+2)*d.wp+2, p.H*d.wp
	d.kp, d.cp = 12*d.kb, 32*d.cb
	d.acc, d.xs, d.dys = roundUp(9*d.kp*d.cp, 16), roundUp(d.cb*d.pos*32, 16), roundUp(d.kb*d.d*12, 16)
	if ws > d.acc {
		d.m = min(d.pairs, (ws-d.acc)/(d.xs+d.dys))
	}
	return d
}

// words is the scratch the plan takes, in float32 words.
func (d dwPlan) words() int { return d.acc + d.m*(d.xs+d.dys) }

// convDirectWGradWords is the scratch convDirectWGrad takes for p with m
// sample pairs per chunk.
func convDirectWGradWords(p ConvArgs, m int) int {
	d := newDWPlan(p, 0)
	return d.acc + m*(d.xs+d.dys)
}

// dwJob is one call's state, pooled so a warm call does not allocate.
type dwJob struct {
	p      ConvArgs
	d      dwPlan
	dw     ConvOut
	dy, x  []uint16
	acc    []float32
	xs     []uint32 // the chunk's xs, pair after pair; dys after them
	dys    []uint32
	n0     int // the chunk's first pair
	g      int // output blocks per product unit
	kn     *gemmKernel[float32]
	phase  int              // what the workers' units are: dwPhasePack or dwPhaseProducts
	units  int              // units of the phase
	next   atomic.Int64     // the next unit to claim
	claim  func(lo, hi int) // the job's claimed method, bound once
	clear  func(lo, hi int) // its zero method
	finish func(lo, hi int) // its write method
}

// The phases of a chunk.
const (
	dwPhasePack = iota
	dwPhaseProducts
)

var dwJobs freeList[dwJob]

// convDirectWGrad computes the weight gradient of the 3×3 stride-1 pad-1
// convolution p from bfloat16 dy and x into dw (float32, or rounded once
// to 16 bits) on the pair kernel, in ws (at least convDirectWGradWords(p,
// 1) float32 words; more take more pairs at a time).
func convDirectWGrad(p ConvArgs, dw ConvOut, dy, x []uint16, ws []float32) {
	convDirectWGradWith(p, dw, dy, x, ws, sbgemm)
}

// convDirectWGradWith is convDirectWGrad on the pair kernel kn.
func convDirectWGradWith(p ConvArgs, dw ConvOut, dy, x []uint16, ws []float32, kn *gemmKernel[float32]) {
	d := newDWPlan(p, len(ws))
	checkDirectWGrad(p, d, dw, dy, x, ws)
	j := dwJobs.get()
	if j.claim == nil {
		j.claim, j.clear, j.finish = j.claimed, j.zero, j.write
	}
	j.p, j.d, j.dw, j.dy, j.x, j.kn = p, d, dw, dy, x, kn
	j.acc = ws[:d.acc]
	j.xs, j.dys = words(ws[d.acc:d.acc+d.m*d.xs]), words(ws[d.acc+d.m*d.xs:d.words()])
	j.g = max(1, d.kb*d.cb/(3*Workers()))
	ParallelFor(ceilDiv(d.acc, dwClearGrain), 1, j.clear)
	for j.n0 = 0; j.n0 < d.pairs; j.n0 += d.m {
		j.run(dwPhasePack, min(d.m, d.pairs-j.n0)*(d.cb+d.kb))
		j.run(dwPhaseProducts, d.cb*ceilDiv(d.kb, j.g))
	}
	ParallelFor(p.K, 1, j.finish)
	j.dw, j.dy, j.x, j.acc, j.xs, j.dys, j.kn = ConvOut{}, nil, nil, nil, nil, nil, nil
	dwJobs.put(j)
}

// dwClearGrain is the sums cleared per unit, in words.
const dwClearGrain = 1 << 15

// zero clears units [lo, hi) of dwClearGrain words of the sums.
func (j *dwJob) zero(lo, hi int) { clear(j.acc[lo*dwClearGrain : min(hi*dwClearGrain, len(j.acc))]) }

// round16 rounds v to bfloat16 bits, or float16 when not bf16.
func round16(v float32, bf16 bool) uint16 {
	if bf16 {
		return dtype.BF16FromF32(v)
	}
	return dtype.F16FromF32(v)
}

// checkDirectWGrad panics unless p is a convolution convDirectWGrad takes
// and the operands and ws are long enough.
func checkDirectWGrad(p ConvArgs, d dwPlan, dw ConvOut, dy, x []uint16, ws []float32) {
	if p.R != 3 || p.S != 3 || p.StrideH != 1 || p.StrideW != 1 || p.PadH != 1 || p.PadW != 1 ||
		p.DilH != 1 || p.DilW != 1 || p.Groups != 1 || p.OH != p.H || p.OW != p.W ||
		p.N < 1 || p.C < 1 || p.K < 1 || p.H < 1 || p.W < 1 {
		panic(fmt.Sprintf("kernels: convDirectWGrad takes 3x3 stride-1 pad-1 convolutions, got %+v", p))
	}
	if d.m < 1 {
		panic(fmt.Sprintf("kernels: convDirectWGrad: ws holds %d float32 words, needs %d (convDirectWGradWords)",
			len(ws), convDirectWGradWords(p, 1)))
	}
	ndw := len(dw.F)
	if dw.F == nil {
		ndw = len(dw.H.Bits)
	}
	hw := p.H * p.W
	if len(dy) < p.N*p.K*hw || len(x) < p.N*p.C*hw || ndw < p.K*p.C*9 {
		panic(fmt.Sprintf("kernels: convDirectWGrad: dy %d, x %d, dw %d elements, need %d, %d, %d",
			len(dy), len(x), ndw, p.N*p.K*hw, p.N*p.C*hw, p.K*p.C*9))
	}
}

// run has the workers claim the phase's units one at a time.
func (j *dwJob) run(phase, units int) {
	j.phase, j.units = phase, units
	j.next.Store(0)
	ParallelFor(min(Workers(), units), 1, j.claim)
}

// claimed runs units of the phase until none is left.
func (j *dwJob) claimed(_, _ int) {
	for {
		u := int(j.next.Add(1) - 1)
		if u >= j.units {
			return
		}
		if j.phase == dwPhasePack {
			j.packs(u, u+1)
		} else {
			j.products(u)
		}
	}
}

// packs writes pack units [lo, hi) of the chunk: unit u is pair u/(Cb+Kb)
// of the chunk and, by u%(Cb+Kb), one block of its xs or of its dys.
func (j *dwJob) packs(lo, hi int) {
	d := &j.d
	for u := lo; u < hi; u++ {
		i, b := u/(d.cb+d.kb), u%(d.cb+d.kb)
		n := 2 * (j.n0 + i)
		if b < d.cb {
			packDWX(j.xs[i*d.xs+b*d.pos*32:][:d.pos*32], j.x, j.p, d, n, b)
		} else {
			packDWDY(j.dys[i*d.dys+(b-d.cb)*d.d*12:][:d.d*12], j.dy, j.p, d, n, b-d.cb)
		}
	}
}

// products adds the chunk's products into product unit u's tiles: those
// of input block u/G and output blocks [g·(u%G), g·(u%G)+g) (G groups of
// g blocks per input block), so that a chunk of xs serves them all.
func (j *dwJob) products(u int) {
	d, kn := &j.d, j.kn
	groups := ceilDiv(d.kb, j.g)
	cb, kb0 := u/groups, j.g*(u%groups)
	kb1 := min(kb0+j.g, d.kb)
	ldc := 9 * d.cp
	for i := range min(d.m, d.pairs-j.n0) {
		xs := j.xs[i*d.xs+cb*d.pos*32:]
		for q0 := 0; q0 < d.d; q0 += dwKC {
			n := min(dwKC, d.d-q0)
			for kb := kb0; kb < kb1; kb++ {
				f := kn.full
				if kn.half != nil && j.p.K-12*kb <= 6 {
					f = kn.half
				}
				c := j.acc[12*kb*ldc+32*cb:]
				a := floats(j.dys[i*d.dys+(kb*d.d+q0)*12:][:12*n])
				for t := range 9 {
					off := (t/3-1)*d.wp + t%3 - 1
					b := floats(xs[(1+d.wp+q0+off)*32:][:32*n])
					f(2*n, a, b, c[t*d.cp:], ldc, 0, 1)
				}
			}
		}
	}
}

// write stores output channels [lo, hi) of the sums into dw.
func (j *dwJob) write(lo, hi int) {
	p, d := &j.p, &j.d
	for k := lo; k < hi; k++ {
		sums := j.acc[k*9*d.cp : (k+1)*9*d.cp]
		if j.dw.F != nil {
			row := j.dw.F[k*p.C*9 : (k+1)*p.C*9]
			for t := range 9 {
				for c, v := range sums[t*d.cp : t*d.cp+p.C] {
					row[c*9+t] = v
				}
			}
			continue
		}
		row := j.dw.H.Bits[k*p.C*9 : (k+1)*p.C*9]
		for t := range 9 {
			for c, v := range sums[t*d.cp : t*d.cp+p.C] {
				row[c*9+t] = round16(v, j.dw.H.BF16)
			}
		}
	}
}

// packDWX writes input block cb of samples n0 and n0+1 (zero past N) of x
// into blk (layout in the overview), a padded row at a time.
func packDWX(blk []uint32, x []uint16, p ConvArgs, d *dwPlan, n0, cb int) {
	clear(blk[:(1+d.wp)*32])
	clear(blk[(1+(p.H+1)*d.wp)*32:])
	for y := range p.H {
		r := 1 + (y+1)*d.wp
		clear(blk[r*32 : (r+1)*32])
		clear(blk[(r+p.W+1)*32 : (r+p.W+2)*32])
		for g := range 2 {
			packDWRows(blk[(r+1)*32+16*g:], 32, 16, x, p.C, cb*32+16*g, p, n0, y)
		}
	}
}

// packDWDY writes output block kb of samples n0 and n0+1 (zero past N) of
// dy into blk (layout in the overview), a padded row at a time.
func packDWDY(blk []uint32, dy []uint16, p ConvArgs, d *dwPlan, n0, kb int) {
	for y := range p.H {
		q := y * d.wp
		clear(blk[q*12 : (q+1)*12])
		clear(blk[(q+p.W+1)*12 : (q+p.W+2)*12])
		packDWRows(blk[(q+1)*12:], 12, 12, dy, p.K, kb*12, p, n0, y)
	}
}

// packDWRows writes row y of channels [ch, ch+width) (of chans) of
// samples n0 and n0+1 of v as pair words: pixel j's width words at
// dst[j·step], zero past the channels, zero high halves past the batch.
func packDWRows(dst []uint32, step, width int, v []uint16, chans, ch int, p ConvArgs, n0, y int) {
	rows := max(0, min(width, chans-ch))
	var lo, hi []uint16
	if rows > 0 {
		hw := p.H * p.W
		lo = v[(n0*chans+ch)*hw+y*p.W:]
		if n0+1 < p.N {
			hi = v[((n0+1)*chans+ch)*hw+y*p.W:]
		}
	}
	dwPack(dst, step, width, lo, hi, p.H*p.W, rows, p.W)
}

// dwPackGo is dwPack in Go: dst[j·step + c] = lo[c·plane + j] |
// hi[c·plane + j]<<16 for j < n and c < width, zero from c = rows on and
// zero high halves when hi is nil.
func dwPackGo(dst []uint32, step, width int, lo, hi []uint16, plane, rows, n int) {
	for j := range n {
		row := dst[j*step : j*step+width]
		for c := range row {
			var w uint32
			if c < rows {
				w = uint32(lo[c*plane+j])
				if hi != nil {
					w |= uint32(hi[c*plane+j]) << 16
				}
			}
			row[c] = w
		}
	}
}
