package kernels

import (
	"encoding/binary"
	"unsafe"
)

// Packers of bfloat16 pair panels (the layout is in gemm_bf16.go). Every
// panel is packed by one of two loops, chosen by which way the operand is
// contiguous:
//
//   - rows (packPairRows): the panel's lines are adjacent in memory (the
//     rows of a non-transposed B, the columns of a transposed A), so each
//     panel row interleaves two runs of values, one per depth;
//   - lines (packPairLines): each line's depth run is contiguous (the rows
//     of a non-transposed A, the columns of a transposed B), so each line
//     is already a run of pair words, and the panel is their transpose.
//
// On AVX-512 both run in assembly (pack_pairs_amd64.s: VPERMT2W
// interleaves for rows, 16×16 dword transposes in registers for lines);
// the Go loops here are their twins, used without AVX-512 and as the
// tests' reference, and the two agree bit for bit (both only move bits).

// packAPairs is packA for a pair kernel: the mc×kc block of op(A) at
// (i0, p0), bfloat16 bits in src.h, as pair panels of kn.mr rows.
func packAPairs[T Float](kn *gemmKernel[T], dst []T, src operand[T], off, ld int, trans bool, i0, mc, p0, kc int) {
	// op(A)[i][p] = h[off + i·is + p·ps]
	is, ps := ld, 1
	if trans {
		is, ps = 1, ld
	}
	packPairs(words(as[float32](dst)), src.h, off+p0*ps, is, ps, i0, mc, kn.mr, kc)
}

// packBPairs is packB for a pair kernel: the kc×nc block of op(B) at
// (p0, j0) as pair panels of kn.nr columns.
func packBPairs[T Float](kn *gemmKernel[T], dst []T, src operand[T], off, ld int, trans bool, p0, kc, j0, nc int) {
	// op(B)[p][j] = h[off + p·ps + j·js]
	ps, js := ld, 1
	if trans {
		ps, js = 1, ld
	}
	packPairs(words(as[float32](dst)), src.h, off+p0*ps, js, ps, j0, nc, kn.nr, kc)
}

// packPairs packs lines x0 … x0+count−1 (rows of op(A) or columns of
// op(B)), line x's depth p at h[at + x·xs + p·ps], into pair panels of w
// lines (slots w·kc words apart), zero past count.
func packPairs(d []uint32, h []uint16, at, xs, ps, x0, count, w, kc int) {
	asm := pairPackAsm(w)
	switch {
	case xs == 1 && kc > 1 && asm:
		packPairRowsAVX512(d, h, at+x0, ps, count, w, kc)
	case xs == 1 && kc > 1:
		packPairRows(d, h, at+x0, ps, count, w, kc)
	case ps == 1 && asm:
		packPairLinesAVX512(d, h, at, xs, x0, count, w, kc)
	default:
		packPairLines(d, h, at, xs, ps, x0, count, w, kc)
	}
}

// packPairLines is packPairs line by line, for any strides: each line's
// depth run becomes one dword column of its panel.
func packPairLines(d []uint32, h []uint16, at, xs, ps, x0, count, w, kc int) {
	kp := (kc + 1) / 2
	for q := 0; q < count; q += w {
		panel := d[q*kc : q*kc+w*kp]
		for x := range w {
			if q+x >= count {
				for p := range kp {
					panel[p*w+x] = 0
				}
				continue
			}
			pairRun(panel[x:], w, h, at+(x0+q+x)*xs, ps, kc)
		}
	}
}

// packPairRows is packPairs for adjacent lines (xs = 1: the rows of a
// non-transposed B, the columns of a transposed A), the first at h[at]:
// each panel row of pairs interleaves two runs of w contiguous values, so
// it reads the operand row by row instead of down its columns.
func packPairRows(d []uint32, h []uint16, at, ps, count, w, kc int) {
	kp := (kc + 1) / 2
	for q := 0; q < count; q += w {
		n := min(w, count-q)
		panel := d[q*kc : q*kc+w*kp]
		for p := range kp {
			row := panel[p*w : p*w+w]
			lo := h[at+q+2*p*ps : at+q+2*p*ps+n]
			if 2*p+1 < kc {
				hi := h[at+q+(2*p+1)*ps : at+q+(2*p+1)*ps+n]
				for x, v := range lo {
					row[x] = uint32(v) | uint32(hi[x])<<16
				}
			} else {
				for x, v := range lo {
					row[x] = uint32(v)
				}
			}
			clear(row[n:])
		}
	}
}

// littleEndian reports whether this machine stores the low half of a word
// first.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// pairRun packs the kc values h[at], h[at+step], … as ⌈kc/2⌉ pair words
// into d[0], d[gap], d[2·gap], …, the last pair's high half zero when kc
// is odd.
func pairRun(d []uint32, gap int, h []uint16, at, step, kc int) {
	p := 0
	if step == 1 && kc > 1 && littleEndian && uintptr(unsafe.Pointer(&h[at]))%4 == 0 {
		// A pair of adjacent values is one little-endian word, here
		// aligned: read the words themselves.
		n := kc / 2
		src := unsafe.Slice((*uint32)(unsafe.Pointer(&h[at])), n)
		_ = h[at+2*n-1]
		dst := d[:(n-1)*gap+1]
		for i, v := range src {
			dst[i*gap] = v
		}
		p = n
	}
	if step == 1 && kc > 1 && littleEndian && p == 0 {
		// A pair of adjacent values is one little-endian word.
		b := unsafe.Slice((*byte)(unsafe.Pointer(&h[at])), 2*kc)
		for ; 2*p+1 < kc; p++ {
			d[p*gap] = binary.LittleEndian.Uint32(b[4*p:])
		}
	}
	for ; 2*p+1 < kc; p++ {
		d[p*gap] = uint32(h[at+2*p*step]) | uint32(h[at+(2*p+1)*step])<<16
	}
	if kc%2 == 1 {
		d[p*gap] = uint32(h[at+2*p*step])
	}
}

// pairSpan writes one pair row of a run of panels from two runs of
// values: column c < n of the row gets the pair lo[c−slo] | hi[c−shi]<<16
// at d[c/32·gap + c%32] — panels of 32 columns, gap words apart — each
// half zero where bit c%32 of its mask word, mlo[c/32] or mhi[c/32], is
// clear (the run is not read there), and the high half zero when hi is
// nil.
func pairSpan(d []uint32, r pairInput, n, gap int) {
	for c := range n {
		bit := uint(c % 32)
		var w uint32
		if r.mlo[c/32]>>bit&1 != 0 {
			w = uint32(r.lo[c-r.slo])
		}
		if r.hi != nil && r.mhi[c/32]>>bit&1 != 0 {
			w |= uint32(r.hi[c-r.shi]) << 16
		}
		d[c/32*gap+c%32] = w
	}
}

// pairInput is one pair row's sources for pairPanels: the low and high
// runs (hi nil: zero), the columns before each run's first value (slo,
// shi: lo[0] is column slo) and their column masks (as pairSpan's).
type pairInput struct {
	lo, hi   []uint16
	slo, shi int
	mlo, mhi []uint32
}

// pairPanels writes pair rows 0 … len(runs)−1 of the panels at d (32
// columns each, gap words apart, row i at word 32·i of each), n columns:
// pairSpan of each run, panel by panel so that each panel's rows are
// written in order. It is the twin of pairPanelsAVX512.
func pairPanels(d []uint32, runs []pairInput, n, gap int) {
	for i, r := range runs {
		pairSpan(d[32*i:], r, n, gap)
	}
}
