package kernels

// tileColumn is one call of a kernel's column (the AMX kernel's): n
// whole mr×nr tiles down one column of C against one B panel, so that
// the kernel's set-up (for AMX the tile configuration, LDTILECFG and
// TILERELEASE: about 95 ns a call on this machine, a third of a
// 256-deep tile) is paid once for them all. Tile i is the tile that full
// (or fullAt, fullBias, and narrowing as the driver does per tile) would
// compute at C's rows i·mr …, bit for bit.
type tileColumn[T Float] struct {
	n, k int
	// A read in place (h not nil): row r of tile i at h[at + (i·mr+r)·ld],
	// k a multiple of 32; else tile i's packed panel at a[i·mr·k:].
	h      []uint16
	at, ld int
	a      []T
	b      []T // the B panel
	// bias, when not nil, is the row every tile's sums start from (mode
	// is then ignored); else mode 0, 1 or 2 as full's, with beta.
	bias []T
	beta T
	mode int
	// c holds tile i at c[i·mr·ldc:]; nil when only out is written (mode
	// 0 or a bias).
	c   []T
	ldc int
	// out, when not nil, receives each finished tile narrowed to
	// bfloat16 (as narrowTile): tile i at out[oat + i·mr·ldo:].
	out      []uint16
	oat, ldo int
	tmp      []T // an mr×nr scratch tile
}

// column runs the kernel's column over the whole tiles of the block's
// column of tiles at jr (all nr columns valid) and returns the rows it
// did, from 0: none when a bias would start a slice that adds to C (the
// per-tile path merges it into C first). Each tile is what macro's
// per-tile path computes there.
func (j *gemmJob[T]) column(pa []T, aAt, kc, mc int, bp, tmp []T, co, jr, mode int, bias []T, last bool) int {
	mr := j.kern.mr
	n := mc / mr
	if n == 0 || (bias != nil && mode != 0) {
		return 0
	}
	at := co + jr
	t := tileColumn[T]{n: n, k: kc, a: pa, b: bp, beta: j.beta, mode: mode, c: j.c[at:], ldc: j.g.LdC, tmp: tmp}
	if aAt >= 0 {
		t.h, t.at, t.ld = j.a.h, aAt, j.g.LdA
	}
	if bias != nil {
		t.bias = bias[jr:]
	}
	if last && j.out != nil {
		t.out, t.oat, t.ldo = j.out, at, j.g.LdC
		if mode == 0 {
			t.c = nil // straight from the tile registers to out, by tmp
		}
	}
	j.kern.column(t)
	return n * mr
}
