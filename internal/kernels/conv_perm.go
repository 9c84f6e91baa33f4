package kernels

import "unsafe"

// im2col of 16-bit values over small planes by word permutation. When a
// whole input plane fits two AVX-512 registers (H·W ≤ 64) and a whole
// output plane is one band of at most 64 outputs, every row of the
// im2col tile — one channel and kernel tap, one sample — is a fixed
// permutation of that sample's plane, zero in the padding: one VPERMI2W
// per 32 outputs, under a mask of the valid ones. convPerm holds the
// permutations, built once per call from the convolution alone; the rows
// im2colTile builds one copy per output row (a few words each on such
// planes) come out the same, bit for bit.

// convPermOn enables the permutation path (a variable so that the
// benchmarks can compare it with the row copies).
var convPermOn = true

// convPermTaps is the most kernel taps (R·S) a permutation table holds.
const convPermTaps = 9

// convPerm is the permutation table of one convolution (the layout the
// assembly reads: idx at 0, valid at convPermValid, load and store after).
type convPerm struct {
	idx   [convPermTaps][2][32]uint16 // per tap and half of the outputs: the plane index each reads
	valid [convPermTaps][2]uint32     // the outputs that read the plane (the others are padding: 0)
	load  [2]uint32                   // the plane's words in each register
	store [2]uint32                   // the outputs in each half
	hw    int
	nbs   int // outputs per sample
}

// Offsets of convPerm's fields, as conv_perm_amd64.s hard-codes them.
const (
	convPermValid = 1152
	convPermLoad  = 1224
	convPermStore = 1232
)

// lowBits returns a mask of the low n bits (n ≤ 32).
func lowBits(n int) uint32 { return uint32(uint64(1)<<max(0, n) - 1) }

// permFits reports whether p can take a permutation path: the AVX-512
// permutes, at most convPermTaps taps, and input and output planes of 1
// to 64 elements.
func permFits(p *ConvArgs) bool {
	hw, nbs := p.H*p.W, p.OH*p.OW
	return convPermOn && CPU.AVX512 && hw > 0 && hw <= 64 && nbs > 0 && nbs <= 64 && p.R*p.S <= convPermTaps
}

// forEachRead calls f for every kernel tap, output i of the plane and the
// input j it reads, where that lies inside the plane (not in the padding).
func forEachRead(p *ConvArgs, f func(tap, i, j int)) {
	for tap := range p.R * p.S {
		r, s := tap/p.S, tap%p.S
		for i := range p.OH * p.OW {
			ih := i/p.OW*p.StrideH + r*p.DilH - p.PadH
			iw := i%p.OW*p.StrideW + s*p.DilW - p.PadW
			if ih >= 0 && ih < p.H && iw >= 0 && iw < p.W {
				f(tap, i, ih*p.W+iw)
			}
		}
	}
}

// build fills t for p and reports whether p can use it (permFits).
func (t *convPerm) build(p *ConvArgs) bool {
	if !permFits(p) {
		return false
	}
	hw, nbs := p.H*p.W, p.OH*p.OW
	*t = convPerm{hw: hw, nbs: nbs}
	forEachRead(p, func(tap, i, j int) {
		t.idx[tap][i/32][i%32] = uint16(j)
		t.valid[tap][i/32] |= 1 << (i % 32)
	})
	t.load = [2]uint32{lowBits(min(hw, 32)), lowBits(hw - 32)}
	t.store = [2]uint32{lowBits(min(nbs, 32)), lowBits(nbs - 32)}
	return true
}

// im2col writes rows [r0, r1) of the im2col tiles of ns samples (whole
// planes, sample s at column s·nbs of rows ld apart) into col, x starting
// at the first sample's group of channels, samples xs elements apart; rs
// is R·S. It is im2colSamples' result over one band of the whole plane.
func (t *convPerm) im2col(col, x []uint16, ld, xs, ns, rs, r0, r1 int) {
	permRows(col, x, ld, xs, ns, rs, r0, r1, t.hw, t.nbs, func(dst, x []uint16, t0, t1 int) {
		im2colPerm(dst, ld, x, xs, ns, t0, t1, t)
	})
}

// permRows cuts rows [r0, r1) of an im2col tile (rows ld apart in col,
// ns samples of nbs columns, planes of hw elements in x, samples xs
// apart, rs taps a channel) into runs of one channel's taps [t0, t1),
// and runs each: its rows from dst, its channel's plane from x.
func permRows[T uint16 | float32](col, x []T, ld, xs, ns, rs, r0, r1, hw, nbs int, run func(dst, x []T, t0, t1 int)) {
	if r0 >= r1 || ns == 0 {
		return
	}
	_ = col[(r1-r0-1)*ld+ns*nbs-1]
	_ = x[(ns-1)*xs+((r1-1)/rs+1)*hw-1]
	for row := r0; row < r1; {
		c, t0 := row/rs, row%rs
		t1 := min(rs, t0+r1-row)
		run(col[(row-r0)*ld:], x[c*hw:], t0, t1)
		row += t1 - t0
	}
}

// im2colPerm writes taps [t0, t1) of one channel (plane at x[0:hw],
// sample s at x[s·xs:]) for ns samples: tap t's row at dst[(t−t0)·ld:],
// sample s at column s·nbs. Assembly on AVX-512 (conv_perm_amd64.s),
// else im2colPermGo.
func im2colPerm(dst []uint16, ld int, x []uint16, xs, ns, t0, t1 int, t *convPerm) {
	if CPU.AVX512 {
		im2colPermAVX512(unsafe.SliceData(dst), ld, unsafe.SliceData(x), xs, ns, t.nbs, t0, t1, t)
		return
	}
	im2colPermGo(dst, ld, x, xs, ns, t0, t1, t)
}

// im2colPermGo is im2colPerm in Go: the assembly's twin.
func im2colPermGo(dst []uint16, ld int, x []uint16, xs, ns, t0, t1 int, t *convPerm) {
	for s := range ns {
		var plane [64]uint16
		copy(plane[:t.hw], x[s*xs:])
		for tap := t0; tap < t1; tap++ {
			out := dst[(tap-t0)*ld+s*t.nbs:][:t.nbs]
			for i := range out {
				h, b := i/32, uint(i%32)
				out[i] = 0
				if t.valid[tap][h]>>b&1 != 0 {
					out[i] = plane[t.idx[tap][h][b]]
				}
			}
		}
	}
}
