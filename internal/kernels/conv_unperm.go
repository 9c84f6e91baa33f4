package kernels

import "unsafe"

// Float32 im2col and col2im over small planes by permutation, the float
// counterparts of conv_perm.go: when a whole input plane has at most 64
// pixels and a whole output plane is one band of at most 64 outputs, a
// tile row (one channel and tap, one sample) is a permutation of the
// plane, zero in the padding, and each tap sends every pixel at most one
// entry of its row, so a channel's dx plane is the sum, tap by tap, of
// the tap rows permuted. Either way it is two VPERMI2PS per 16 values
// (over the four registers of up to 64 sources), under a mask of the
// values that have a source. The sums run in col2imTile's order from +0,
// so dx comes out the same, bit for bit (col2imTile's added zeros change
// nothing: a sum from +0 is never −0); so do the tiles.

// convUnperm is a float permutation table of one convolution, from the
// plane to the tile rows (im2col) or back (col2im): per tap, the source
// each destination value reads (the layout the assembly reads: idx at
// 0, then hi, valid, load, store).
type convUnperm struct {
	idx   [convPermTaps][4][16]uint32 // per tap and quarter of the destination: the source each value reads
	hi    [convPermTaps][4]uint16     // the values whose source is ≥ 32 (the second pair of registers)
	valid [convPermTaps][4]uint16     // the values that have a source (the others: 0, or nothing added)
	load  [4]uint16                   // the sources in each register
	store [4]uint16                   // the destination's values in each register
	hw    int
	nbs   int // outputs per sample: a tile row's columns
}

// Offsets of convUnperm's fields, as conv_perm_amd64.s hard-codes them.
const (
	convUnpermHi    = 2304
	convUnpermValid = 2376
	convUnpermLoad  = 2448
	convUnpermStore = 2456
)

// build fills t for p, from the plane to the tile rows when gather (else
// back), and reports whether p can use it (permFits).
func (t *convUnperm) build(p *ConvArgs, gather bool) bool {
	if !permFits(p) {
		return false
	}
	hw, nbs := p.H*p.W, p.OH*p.OW
	*t = convUnperm{hw: hw, nbs: nbs}
	forEachRead(p, func(tap, i, j int) {
		src, dst := i, j
		if gather {
			src, dst = j, i
		}
		t.idx[tap][dst/16][dst%16] = uint32(src)
		t.valid[tap][dst/16] |= 1 << (dst % 16)
		if src >= 32 {
			t.hi[tap][dst/16] |= 1 << (dst % 16)
		}
	})
	srcs, dsts := nbs, hw
	if gather {
		srcs, dsts = hw, nbs
	}
	for q := range 4 {
		t.load[q] = uint16(lowBits(min(16, srcs-16*q)))
		t.store[q] = uint16(lowBits(min(16, dsts-16*q)))
	}
	return true
}

// im2col writes rows [r0, r1) of the float32 im2col tiles of ns samples
// (whole planes, sample s at column s·nbs of rows ld apart) into col, as
// convPerm.im2col does for 16-bit values (t built with gather).
func (t *convUnperm) im2col(col, x []float32, ld, xs, ns, rs, r0, r1 int) {
	permRows(col, x, ld, xs, ns, rs, r0, r1, t.hw, t.nbs, func(dst, x []float32, t0, t1 int) {
		im2colPermF(dst, ld, x, xs, ns, t0, t1, t)
	})
}

// im2colPermF is im2colPerm for float32 tiles: assembly on AVX-512
// (conv_perm_amd64.s), else im2colPermFGo.
func im2colPermF(dst []float32, ld int, x []float32, xs, ns, t0, t1 int, t *convUnperm) {
	if CPU.AVX512 {
		im2colPermF32AVX512(unsafe.SliceData(dst), ld, unsafe.SliceData(x), xs, ns, t.nbs, t0, t1, t)
		return
	}
	im2colPermFGo(dst, ld, x, xs, ns, t0, t1, t)
}

// im2colPermFGo is im2colPermF in Go: the assembly's twin.
func im2colPermFGo(dst []float32, ld int, x []float32, xs, ns, t0, t1 int, t *convUnperm) {
	for s := range ns {
		plane := x[s*xs:][:t.hw]
		for tap := t0; tap < t1; tap++ {
			out := dst[(tap-t0)*ld+s*t.nbs:][:t.nbs]
			for i := range out {
				q, b := i/16, uint(i%16)
				out[i] = 0
				if t.valid[tap][q]>>b&1 != 0 {
					out[i] = plane[t.idx[tap][q][b]]
				}
			}
		}
	}
}

// col2im writes (overwrites) chans planes of dx from their tile rows in
// col (channel c's tap t row at col[(c·rs+t)·ld:], the sample's nbs
// columns from there): col2imTile over one band of the whole plane, dx
// cleared first (t built without gather).
func (t *convUnperm) col2im(dx []float32, col []float32, ld, chans, rs int) {
	if chans == 0 {
		return
	}
	_ = dx[chans*t.hw-1]
	_ = col[((chans-1)*rs+rs-1)*ld+t.nbs-1]
	for c := range chans {
		col2imPerm(dx[c*t.hw:], col[c*rs*ld:], ld, rs, t)
	}
}

// col2imPerm writes one plane, dx[0:hw], from its rs tap rows (ld
// apart) in col: assembly on AVX-512 (conv_perm_amd64.s), else
// col2imPermGo.
func col2imPerm(dx, col []float32, ld, rs int, t *convUnperm) {
	if CPU.AVX512 {
		wide := 0
		if t.nbs > 32 {
			wide = 1
		}
		col2imPermAVX512(unsafe.SliceData(dx), unsafe.SliceData(col), ld, rs, ceilDiv(t.hw, 16), wide, t)
		return
	}
	col2imPermGo(dx, col, ld, rs, t)
}

// col2imPermGo is col2imPerm in Go: the assembly's twin.
func col2imPermGo(dx, col []float32, ld, rs int, t *convUnperm) {
	out := dx[:t.hw]
	clear(out)
	for tap := range rs {
		row := col[tap*ld:][:t.nbs]
		for j := range out {
			q, b := j/16, uint(j%16)
			if t.valid[tap][q]>>b&1 != 0 {
				out[j] += row[t.idx[tap][q][b]]
			}
		}
	}
}
