package kernels

import (
	"fmt"
	"unsafe"
)

// The forward pass of a bfloat16 convolution on the pair kernels (AMX or
// VDPBF16PS) writes its im2col tile straight into the packed B those
// kernels read, instead of writing the 16-bit tile for the GEMM driver to
// pack again: each pair row of a panel interleaves two im2col rows, and
// the driver, handed the block whole (gemmPackedB), runs no pack
// task. The rows are built a few at a time in an L1-sized scratch, or not
// at all for a "same" convolution of one sample per unit (stride 1, OW =
// W), the only units that take this route (pairPlan): each
// of its rows is one contiguous run of the input plane, paired from x
// itself, its padding (columns, and rows above and below the plane)
// masked off as it is loaded, so never read. The packed block is what
// packB makes of the tile, word for word (TestIm2colPairs), so the
// products are unchanged, bit for bit.
//
// Scratch: the unit's packed block, wholeBSize(kn, crs, nb) float32
// words (about twice the 16-bit tile's bytes, half of them never
// touched), and its column masks, pairMaskWords(p, nb) 16-bit values.

// convPairB turns the direct pair-panel im2col on (a variable so that the
// tests and benchmarks can compare it with the tile the driver packs).
var convPairB = true

// pairPanelsAsm lets im2colPairs pair in assembly where the CPU allows
// (false: in Go, bounds-checked; the tests run both).
var pairPanelsAsm = true

// convPairDirect is the rows a direct unit pairs per pass over its panels.
var convPairDirect = 32

// convPairScratch is the 16-bit values of row scratch the tests give
// units that build their rows (16 KiB).
const convPairScratch = 8192

// pairPlan returns the words of a forward unit's packed B and the 16-bit
// values of its scratch (the column masks: direct units build no rows)
// when the call writes its im2col as pair panels, else 0, 0.
func (j *convJob[T]) pairPlan() (tp, scratch int) {
	p, d := &j.p, &j.d
	if !convPairB || j.kind != ConvForward || !j.ha.BF16 || !j.hb.BF16 || (d.pointwise && j.spu == 1) {
		return 0, 0
	}
	if !sameConv(p) || j.spu > 1 || (j.bands == 1 && permFits(p)) {
		// Built rows (stride 2, samples side by side, permutation tables)
		// measured 0.95-1.03x the tile route (BenchmarkConvPairB): only
		// direct units take it.
		return 0, 0
	}
	kn := pairKernel(d.crs)
	nb := j.spu * j.band * p.OW
	if kn == nil || kn.nr != pairNR || nb == 0 || nb > kn.blockCols(d.crs) {
		return 0, 0
	}
	return wholeBSize(kn, d.crs, nb), pairMaskWords(p, nb)
}

// takePairs switches a bfloat16 forward call to the pair-panel tile
// where pairPlan says its kernel and shape take it; plan reserved the
// room whatever the CPU (pairTile).
func (j *convJob[T]) takePairs() {
	if !j.half {
		return
	}
	if tp, sc := j.pairPlan(); tp > 0 {
		j.htile.tp, j.htile.t16 = tp, sc
		if w := j.htile.words(); w > j.tile {
			panic(fmt.Sprintf("kernels.%s: pair tile of %d words exceeds the planned %d", j.kind, w, j.tile))
		}
	}
}

// im2colRows writes rows [k0, k1) of the forward tile of ns samples'
// band [oh0, oh1) into col (rows ns·nb apart): by permutation when the
// call has a table.
func (j *convJob[T]) im2colRows(col, x []uint16, ns, k0, k1, oh0, oh1 int) {
	if j.usePerm {
		j.perm.im2col(col, x, ns*j.d.ohw, j.d.xs, ns, j.p.R*j.p.S, k0, k1)
		return
	}
	im2colSamples(&j.p, j.taps, &j.d, col, x, ns, k0, k1, oh0, oh1)
}

// im2colPairs writes the forward tile of ns samples' band [oh0, oh1)
// (crs × nb, x at the first sample's group of channels) into bp as the
// packed block kn's GEMM reads (gemmPackedB). sc holds the column
// masks (pairMasks) and then the rows it builds.
func (j *convJob[T]) im2colPairs(kn *gemmKernel[float32], bp []uint32, sc, x []uint16, ns, oh0, oh1 int) {
	p, d := &j.p, &j.d
	nb := ns * (oh1 - oh0) * p.OW
	step, ncPad := kn.kcFor(d.crs), roundUp(nb, 32)
	direct := sameConv(p) && ns == 1 && !j.usePerm
	masks, sc := j.pairMasks(sc, nb, direct, oh0, oh1)
	np := ncPad / 32
	ch := min(len(sc)/nb&^1, 64)
	if direct {
		ch = convPairDirect
	} else if ch < 2 {
		panic("kernels: im2colPairs: no room for two rows")
	}
	var runs [32]pairInput
	for pc := 0; pc < d.crs; pc += step {
		kc := min(step, d.crs-pc)
		slice := bp[pc*ncPad : (pc+kc)*ncPad]
		t := firstRow(p, pc)
		for k0 := pc; k0 < pc+kc; k0 += ch {
			k1 := min(k0+ch, pc+kc)
			if !direct {
				j.im2colRows(sc, x, ns, k0, k1, oh0, oh1)
			}
			for k := k0; k < k1; k++ {
				var run []uint16
				skip := 0
				if direct {
					run, skip = j.directRun(x, t, oh0, oh1)
				} else {
					run = sc[(k-k0)*nb:][:nb]
				}
				m := masks[(t.r*p.S+t.s)*np:][:np]
				if r := &runs[(k-k0)/2]; (k-k0)%2 == 0 {
					*r = pairInput{lo: run, slo: skip, mlo: m, mhi: m}
				} else {
					r.hi, r.shi, r.mhi = run, skip, m
				}
				t = t.next(p)
			}
			row, group := slice[(k0-pc)/2*32:], runs[:ceilDiv(k1-k0, 2)]
			if !pairPanelsAsm || !pairPanelsFast(row, group, nb, 32*kc) {
				pairPanels(row, group, nb, 32*kc)
			}
		}
		clearPanelTail(slice, kc, nb)
		if kn.amx {
			padBAMX(slice, 32, kc, nb)
		}
	}
}

// pairMasks carves from the front of sc, and fills, the column masks of
// a band [oh0, oh1) of nb columns: for each kernel tap (r, s), ⌈nb/32⌉
// words whose bit c%32 of word c/32 says that column c reads the input,
// not the padding — by output column (c mod OW) alone, or when direct
// also by output row. It returns them and the rest of sc.
func (j *convJob[T]) pairMasks(sc []uint16, nb int, direct bool, oh0, oh1 int) (masks []uint32, rest []uint16) {
	p := &j.p
	np, rs := ceilDiv(nb, 32), p.R*p.S
	masks = unsafe.Slice((*uint32)(unsafe.Pointer(&sc[0])), rs*np) // sc starts on a word
	for tap := range rs {
		ht, wt, m := j.taps[tap/p.S], j.taps[p.R+tap%p.S], masks[tap*np:(tap+1)*np]
		clear(m)
		o0, o1 := 0, nb/p.OW
		if direct {
			o0, o1 = max(ht.lo, oh0)-oh0, min(ht.hi, oh1)-oh0
		}
		lo, hi := max(wt.lo, 0), min(wt.hi, p.OW)
		for o := o0; o < o1 && lo < hi; o++ {
			setBits(m, o*p.OW+lo, o*p.OW+hi)
		}
	}
	return masks, sc[2*rs*np:]
}

// setBits sets bits [a, b) of the bit string m (bit i: bit i%32 of
// m[i/32]).
func setBits(m []uint32, a, b int) {
	for a < b {
		n := min(b-a, 32-a%32)
		m[a/32] |= uint32(uint64(1)<<n-1) << (a % 32)
		a += n
	}
}

// pairMaskWords is the 16-bit values pairMasks takes for nb columns.
func pairMaskWords(p *ConvArgs, nb int) int { return 2 * p.R * p.S * ceilDiv(nb, 32) }

// directRun returns the part of x that im2col row t of band [oh0, oh1)
// of a "same" convolution (stride 1, OW = W) reads, from its first
// column inside the input to its last, and the band columns before it
// (its mask, pairMasks', leaves out the padding between): column c of
// the row is x[at + c − skip] wherever it lies inside the input.
func (j *convJob[T]) directRun(x []uint16, t tileRow, oh0, oh1 int) (run []uint16, skip int) {
	p := &j.p
	ht, wt := j.taps[t.r], j.taps[p.R+t.s]
	hlo, hhi := max(ht.lo, oh0), min(ht.hi, oh1)
	wlo, whi := max(wt.lo, 0), min(wt.hi, p.OW)
	if hlo >= hhi || wlo >= whi {
		return nil, 0
	}
	plane := x[t.c*p.H*p.W:]
	first, last := (hlo-oh0)*p.OW+wlo, (hhi-1-oh0)*p.OW+whi-1
	at := (hlo+ht.off)*p.W + wt.off + wlo
	return plane[at : at+last-first+1], first
}

// clearPanelTail zeroes the columns past nb of the last panel of a kc
// slice (each pair row's), as packB leaves them.
func clearPanelTail(slice []uint32, kc, nb int) {
	n := nb % 32
	if n == 0 {
		return
	}
	last := slice[(nb-n)*kc:]
	for r := range ceilDiv(kc, 2) {
		clear(last[r*32+n : r*32+32])
	}
}

// gemmWPacked is gemmWOut with op(B) the packed block bp (im2colPairs).
func (j *convJob[T]) gemmWPacked(a GemmArgs, id int, bp, c []T, out halfOut) {
	a.LdB = a.N
	a.check("Gemm", len(j.hb.Bits), a.K*a.N, len(c))
	if a.M == 0 || a.N == 0 {
		return
	}
	gemmPackedBOut(j.kn, j.jobs, a, j.apack[id*j.aper:(id+1)*j.aper], operand[T]{}, bp, c, out)
}
