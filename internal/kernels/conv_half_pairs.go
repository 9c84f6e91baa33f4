package kernels

import "unsafe"

// The forward pass of a bfloat16 convolution on the pair kernels (AMX or
// VDPBF16PS) writes its im2col tile straight into the packed B those
// kernels read, instead of writing the 16-bit tile for the GEMM driver to
// pack again: each pair row of a panel interleaves two im2col rows, and
// the driver, handed the block whole (gemmBlockedPacked), runs no pack
// task. The rows are built a few at a time in an L1-sized scratch, or not
// at all where a row is one contiguous run of the input plane (stride 1,
// OW = W, one sample, away from the top and bottom padding): the run is
// then paired from x itself (a whole chunk of rows at a time, or none),
// its padding columns masked off as it is loaded. The packed block is what packB makes of the tile, word for
// word (TestIm2colPairs), so the products are unchanged, bit for bit.
//
// Scratch: the unit's packed block, packedBSize(kn, crs, nb) float32
// words (about twice the 16-bit tile's bytes, half of them never
// touched), and convPairScratch 16-bit values of rows.

// convPairB turns the direct pair-panel im2col on (a variable so that the
// tests and benchmarks can compare it with the tile the driver packs).
var convPairB = true

// convPairScratch is the 16-bit values of a unit's row scratch (16 KiB).
const convPairScratch = 8192

// pairPlan returns the words of a forward unit's packed B and the 16-bit
// values of its scratch (column masks, then rows) when the call writes
// its im2col as pair panels, else 0, 0.
func (j *convJob[T]) pairPlan() (tp, scratch int) {
	p, d := &j.p, &j.d
	if !convPairB || j.kind != convForward || !j.ha.BF16 || !j.hb.BF16 || (d.pointwise && j.spu == 1) {
		return 0, 0
	}
	if j.bands == 1 && permFits(p) {
		return 0, 0 // the permutation tables' im2col measured 0.95-0.97x there (4x4x512)
	}
	kn := pairKernel(d.crs)
	nb := j.spu * j.band * p.OW
	if kn == nil || kn.nr != 32 || nb == 0 || nb > kn.blockCols(d.crs) {
		return 0, 0
	}
	return packedBSize(kn, d.crs, nb), max(2, convPairScratch/nb&^1)*nb + pairMaskWords(p, nb)
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
// packed block kn's GEMM reads (gemmBlockedPacked). sc holds the column
// masks (pairMasks) and then the rows it builds.
func (j *convJob[T]) im2colPairs(kn *gemmKernel[float32], bp []uint32, sc, x []uint16, ns, oh0, oh1 int) {
	p, d := &j.p, &j.d
	nb := ns * (oh1 - oh0) * p.OW
	step, ncPad := kn.kcFor(d.crs), roundUp(nb, 32)
	masks, sc := j.pairMasks(sc, nb)
	np := ncPad / 32
	direct := sameConv(p) && ns == 1 && !j.usePerm
	ch := min(len(sc)/nb&^1, 64)
	var runs [32]pairInput
	for pc := 0; pc < d.crs; pc += step {
		kc := min(step, d.crs-pc)
		slice := bp[pc*ncPad : (pc+kc)*ncPad]
		t := firstRow(p, pc)
		for k0 := pc; k0 < pc+kc; k0 += ch {
			k1 := min(k0+ch, pc+kc)
			inPlace := direct && j.directRows(t, k1-k0, oh0, oh1)
			if !inPlace {
				j.im2colRows(sc, x, ns, k0, k1, oh0, oh1)
			}
			for k := k0; k < k1; k++ {
				r := &runs[(k-k0)/2]
				run := sc[(k-k0)*nb:][:nb]
				if inPlace {
					at, _ := j.directRow(t, oh0, oh1)
					run = x[at : at+nb]
				}
				m := masks[t.s*np:][:np]
				if (k-k0)%2 == 0 {
					*r = pairInput{lo: run, mlo: m, mhi: m}
				} else {
					r.hi, r.mhi = run, m
				}
				t = t.next(p)
			}
			row, group := slice[(k0-pc)/2*32:], runs[:ceilDiv(k1-k0, 2)]
			if !pairPanelsFast(row, group, nb, 32*kc) {
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
// a band of nb columns: for each kernel column s, ⌈nb/32⌉ words whose
// bit c%32 of word c/32 says that column c (output column c mod OW) reads
// the input, not the padding. It returns them and the rest of sc.
func (j *convJob[T]) pairMasks(sc []uint16, nb int) (masks []uint32, rest []uint16) {
	p := &j.p
	np := ceilDiv(nb, 32)
	masks = unsafe.Slice((*uint32)(unsafe.Pointer(&sc[0])), p.S*np) // sc starts on a word
	for s := range p.S {
		wt, m := j.taps[p.R+s], masks[s*np:(s+1)*np]
		clear(m)
		lo, hi := max(wt.lo, 0), min(wt.hi, p.OW)
		for o := 0; o < nb && lo < hi; o += p.OW {
			setBits(m, o+lo, min(o+hi, nb))
		}
	}
	return masks, sc[2*p.S*np:]
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
func pairMaskWords(p *ConvArgs, nb int) int { return 2 * p.S * ceilDiv(nb, 32) }

// directRows reports whether the n im2col rows from t of band [oh0,
// oh1) are all direct (directRow).
func (j *convJob[T]) directRows(t tileRow, n, oh0, oh1 int) bool {
	for range n {
		if _, ok := j.directRow(t, oh0, oh1); !ok {
			return false
		}
		t = t.next(&j.p)
	}
	return true
}

// directRow reports whether im2col row t of band [oh0, oh1) of a "same"
// convolution is, outside its padding columns, the contiguous run of x at
// at: its input rows all lie inside the plane.
func (j *convJob[T]) directRow(t tileRow, oh0, oh1 int) (at int, ok bool) {
	p := &j.p
	ht, wt := j.taps[t.r], j.taps[p.R+t.s]
	if ht.lo > oh0 || ht.hi < oh1 {
		return 0, false
	}
	at = (oh0+ht.off)*p.W + wt.off
	hw := p.H * p.W
	if at < 0 || at+(oh1-oh0)*p.OW > hw {
		return 0, false
	}
	return t.c*hw + at, true
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

// gemmWPacked is gemmW with op(B) the packed block bp (im2colPairs).
func (j *convJob[T]) gemmWPacked(a GemmArgs, id int, bp, c []T) {
	a.LdB = a.N
	a.check("Gemm", len(j.hb.Bits), a.K*a.N, len(c))
	if a.M == 0 || a.N == 0 {
		return
	}
	gemmBlockedPacked(j.kn, j.jobs, a, j.apack[id*j.aper:(id+1)*j.aper], bp, c)
}
