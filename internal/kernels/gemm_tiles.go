package kernels

// tileRun is one call of a kernel's tiles: n whole mr×nr tiles of C,
// down one column against one B panel or across one row against one A
// panel, so that the kernel's set-up is paid once for them all (for AMX
// the tile configuration, LDTILECFG and TILERELEASE: about 95 ns a call
// on this machine, a third of a 256-deep tile; for AVX2 the Go driver's
// path to each 1.3 µs tile). Tile i is the tile that full (or fullAt,
// fullBias, and narrowing as the driver does per tile) would compute
// there, bit for bit.
type tileRun[T Float] struct {
	n, k int
	// across puts tile i at C's columns i·nr …, against B panel i; else
	// tile i is at C's rows i·mr …, against A panel i.
	across bool
	// A read in place (h not nil): row r of panel i at h[at + (i·mr+r)·ld],
	// k a multiple of 32; else packed panel i at a[i·mr·k:].
	h      []uint16
	at, ld int
	a      []T
	b      []T // the B panels, panel i at b[i·nr·k:]
	// bias, when not nil, is the row every tile's sums start from (tile
	// i's columns of it; mode is then ignored); else mode 0, 1 or 2 as
	// full's, with beta.
	bias []T
	beta T
	mode int
	// c holds C from its first tile's corner (row stride ldc); nil when
	// only out is written (mode 0 or a bias).
	c   []T
	ldc int
	// out, when not nil, receives each finished tile narrowed to
	// bfloat16 (as narrowTile): C's element (r, x) at out[oat + r·ldo + x].
	out      []uint16
	oat, ldo int
	tmp      []T // an mr×nr scratch tile
}

// tileRows runs the kernel's tiles across each row of the block's whole
// tiles, one call a row, and returns the rows and columns of the block
// that it did, from 0: none when a bias would start a slice that adds to
// C (the per-tile path merges it into C first). Each tile is what
// macroTile computes there. Across a row, the A panel stays in L1 while
// the B panels stream from L2, which on one core took 9–25% more GFLOP
// per CPU second than down a column, with the B panel in L1 and the A
// panels, 32 rows apart in A, from L2 (BenchmarkAMXOrder).
func (j *gemmJob[T]) tileRows(pa []T, aAt int, pb, tmp []T, kc, mc, nc, co, mode int, bias []T, last bool) (rows, cols int) {
	mr, nr := j.kern.mr, j.kern.nr
	rows, cols = mc/mr*mr, nc/nr*nr
	if rows == 0 || cols == 0 || (bias != nil && mode != 0) {
		return 0, 0
	}
	t := tileRun[T]{n: cols / nr, k: kc, across: true, b: pb, bias: bias, beta: j.beta, mode: mode, ldc: j.g.LdC, tmp: tmp}
	if last && j.out.bits != nil {
		t.out, t.ldo = j.out.bits, j.out.ld
	}
	for ir := 0; ir < rows; ir += mr {
		at := co + ir*j.g.LdC
		if aAt >= 0 {
			t.h, t.at, t.ld = j.a.h, aAt+ir*j.g.LdA, j.g.LdA
		} else {
			t.a = pa[ir*kc:]
		}
		t.c, t.oat = j.c[at:], j.outAt(at)
		if t.out != nil && mode == 0 {
			t.c = nil // straight from the tile registers to out, by tmp
		}
		j.kern.tiles(t)
	}
	return rows, cols
}

// runsTiles says whether macro's block goes to the kernel's tiles: every
// block for the AMX kernel's (tileRows declines what it cannot take);
// for any other kernel's, blocks of packed A with no bfloat16 out now,
// and with a bias only down columns (tileCol merges it into C first);
// never when gemmTileRuns is off.
func (j *gemmJob[T]) runsTiles(aAt int, bias []T, last bool) bool {
	kn := j.kern
	switch {
	case kn.tiles == nil || !gemmTileRuns:
		return false
	case kn.amx:
		return true
	}
	return aAt < 0 && (!last || j.out.bits == nil) && (bias == nil || kn.tilesDown)
}

// gemmTileRuns turns the kernels' runs of tiles on (a variable so that
// the benchmarks and tests can compare with the per-tile path: false).
var gemmTileRuns = true

// tileCol runs the kernel's tiles down the block's column of whole tiles
// at column jr (all nr columns of it in the block), packed A, one call,
// and returns the rows it did from 0: the block's whole row panels (none
// when mc < mr). Each tile is what macroTile computes there: with a bias
// (the block's columns of it), C first becomes beta·C + bias and the
// tiles add to it (mode 1). Down a column the B panel stays in L1 while
// the A panels stream from L2, as the per-tile loop had them.
func (j *gemmJob[T]) tileCol(pa, pb []T, kc, mc, jr, co, mode int, bias []T) int {
	mr, nr := j.kern.mr, j.kern.nr
	rows := mc / mr * mr
	if rows == 0 {
		return 0
	}
	at := co + jr
	if bias != nil {
		mergeTile(j.c, at, j.g.LdC, rows, bias[jr:], 0, nr, j.beta, mode)
		mode = 1
	}
	j.kern.tiles(tileRun[T]{n: rows / mr, k: kc, a: pa, b: pb[jr*kc : (jr+nr)*kc], beta: j.beta, mode: mode,
		c: j.c[at:], ldc: j.g.LdC})
	return rows
}
