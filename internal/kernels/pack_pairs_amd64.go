//go:build !noasm && amd64

package kernels

import "unsafe"

// pairRowsAVX512 packs one panel from adjacent lines (see
// pack_pairs_amd64.s; packPairRows is its twin).
//
//go:noescape
func pairRowsAVX512(d *uint32, h *uint16, ps, kc, n, w int)

// pairLinesAVX512 packs up to 16 contiguous depth runs as dword columns
// of a panel (see pack_pairs_amd64.s; packPairLines is its twin).
//
//go:noescape
func pairLinesAVX512(d *uint32, gap int, h *uint16, xs, lines, kc, cols int)

// pairPackAsm reports whether panels of w lines pack in assembly.
func pairPackAsm(w int) bool { return CPU.AVX512 && w <= 32 }

// packPairRowsAVX512 is packPairRows (w ≤ 32) panel by panel in
// assembly, each panel's reads bounds-checked here.
func packPairRowsAVX512(d []uint32, h []uint16, at, ps, count, w, kc int) {
	kp := (kc + 1) / 2
	for q := 0; q < count; q += w {
		n := min(w, count-q)
		panel := d[q*kc : q*kc+w*kp]
		_ = h[at+q+(kc-1)*ps+n-1]
		pairRowsAVX512(&panel[0], &h[at+q], ps, kc, n, w)
	}
}

// packPairLinesAVX512 is packPairLines for unit depth stride (w ≤ 32)
// in assembly, 16 lines of a panel per call, each call's reads
// bounds-checked here.
func packPairLinesAVX512(d []uint32, h []uint16, at, xs, x0, count, w, kc int) {
	kp := (kc + 1) / 2
	for q := 0; q < count; q += w {
		panel := d[q*kc : q*kc+w*kp]
		for x := 0; x < w; x += 16 {
			cols := min(16, w-x)
			lines := max(0, min(cols, count-q-x))
			src := unsafe.SliceData(h) // not read when lines is 0
			if lines > 0 {
				first := at + (x0+q+x)*xs
				_ = h[first+(lines-1)*xs+kc-1]
				src = &h[first]
			}
			pairLinesAVX512(&panel[x], w, src, xs, lines, kc, cols)
		}
	}
}

// pairSrc is a pairInput as pairPanelsAVX512 reads it (hi nil: zero;
// slo, shi in bytes).
type pairSrc struct {
	lo, hi   *uint16
	mlo, mhi *uint32
	slo, shi int
}

// pairPanelsAVX512 is pairPanels in assembly (pack_pairs_amd64.s) for
// n ≥ 1 and pairs ≥ 1.
//
//go:noescape
func pairPanelsAVX512(d *uint32, srcs *pairSrc, pairs, n, gap int)

// pairPanelsFast is pairPanels on AVX-512 (at most 32 runs); it reports
// false, having written nothing, without AVX-512. The caller guarantees
// that every column a mask lets in lies inside its run (c − slo <
// len(lo)), as pairPanels' bounds checks would see: the masked loads then
// read nothing outside the runs.
func pairPanelsFast(d []uint32, runs []pairInput, n, gap int) bool {
	if !CPU.AVX512 || len(runs) > 32 {
		return false
	}
	if n == 0 || len(runs) == 0 {
		return true
	}
	var srcs [32]pairSrc
	np := ceilDiv(n, 32)
	_ = d[(np-1)*gap+32*len(runs)-1]
	for i, r := range runs {
		_, _ = r.mlo[np-1], r.mhi[np-1]
		s := pairSrc{lo: runStart(r.lo), mlo: &r.mlo[0], mhi: &r.mhi[0], slo: 2 * r.slo, shi: 2 * r.shi}
		if r.hi != nil {
			s.hi = runStart(r.hi)
		}
		srcs[i] = s
	}
	pairPanelsAVX512(&d[0], &srcs[0], len(runs), n, gap)
	return true
}

// runStart is &run[0], or nil for an empty run (one nothing is read from).
func runStart(run []uint16) *uint16 {
	if len(run) == 0 {
		return nil
	}
	return &run[0]
}
