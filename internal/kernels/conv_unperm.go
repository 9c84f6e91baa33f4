package kernels

import "unsafe"

// col2im of float32 tiles over small planes by permutation, the input
// gradient's counterpart of conv_perm.go: when a whole input plane has at
// most 64 pixels and a whole output plane is one band of at most 64
// outputs, each kernel tap sends every input pixel at most one entry of
// its tile row, so one channel's dx plane is the sum, tap by tap, of each
// tap row permuted (two VPERMI2PS per 16 pixels, under a mask of the
// pixels the tap reaches). The sums run in col2imTile's order from +0,
// so the planes come out the same, bit for bit (col2imTile's added zeros
// change nothing: a sum from +0 is never −0).

// convUnperm is the permutation table of one convolution's input gradient
// (the layout the assembly reads: idx at 0, then hi, valid, load, store).
type convUnperm struct {
	idx   [convPermTaps][4][16]uint32 // per tap and quarter of the plane: the tile column each pixel reads
	hi    [convPermTaps][4]uint16     // the pixels whose column is ≥ 32 (the second pair of registers)
	valid [convPermTaps][4]uint16     // the pixels the tap reaches
	load  [4]uint16                   // a tile row's columns in each register
	store [4]uint16                   // the plane's pixels in each register
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

// build fills t for p and reports whether p can use it (as convPerm's).
func (t *convUnperm) build(p *ConvArgs) bool {
	hw, nbs, rs := p.H*p.W, p.OH*p.OW, p.R*p.S
	if !convPermOn || !CPU.AVX512 || hw == 0 || hw > 64 || nbs == 0 || nbs > 64 || rs > convPermTaps {
		return false
	}
	*t = convUnperm{hw: hw, nbs: nbs}
	for tap := range rs {
		r, s := tap/p.S, tap%p.S
		for i := range nbs {
			ih := i/p.OW*p.StrideH + r*p.DilH - p.PadH
			iw := i%p.OW*p.StrideW + s*p.DilW - p.PadW
			if ih >= 0 && ih < p.H && iw >= 0 && iw < p.W {
				j := ih*p.W + iw
				t.idx[tap][j/16][j%16] = uint32(i)
				t.valid[tap][j/16] |= 1 << (j % 16)
				if i >= 32 {
					t.hi[tap][j/16] |= 1 << (j % 16)
				}
			}
		}
	}
	for q := range 4 {
		t.load[q] = uint16(lowBits(min(16, nbs-16*q)))
		t.store[q] = uint16(lowBits(min(16, hw-16*q)))
	}
	return true
}

// col2im writes (overwrites) chans planes of dx from their tile rows in
// col (channel c's tap t row at col[(c·rs+t)·ld:], the sample's nbs
// columns from there): col2imTile over one band of the whole plane, dx
// cleared first.
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
		col2imPermAVX512(unsafe.SliceData(dx), unsafe.SliceData(col), ld, rs, t)
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
