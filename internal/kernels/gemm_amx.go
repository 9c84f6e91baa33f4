package kernels

import (
	"math"
	"unsafe"
)

// The AMX bfloat16 GEMM: with both operands bfloat16, alpha 1 and a depth
// of at least amxMinK, GemmHalf on a CPU with AMX-BF16 (and the OS's leave
// to use the tile registers) runs a 32×32 micro-kernel on TDPBF16PS, the
// tile dot product, instead of the VDPBF16PS pair kernel. Its panels hold
// pairs of depth values (low half first) as the pair kernel's do, with the
// depth of each panel padded with zero pairs to a whole number of 16-pair
// steps (kb = ⌈⌈kc/2⌉/16⌉ of them), and A in a new order, row-major within
// a step, so that each step's A is two contiguous 16×16-dword tiles:
//
//	A: dst[q·mr·kc + s·512 + r·16 + t] = pair 16s+t of row q·32+r
//	B: dst[q·nr·kc + p·nr + c]          = pair p of column q·32+c (as the pair kernel)
//
// B is the pair kernel's panel, rows ⌈kc/2⌉ … 16·kb−1 zeroed. Both fit the
// float32 panel slots (mr·kc words) when kc ≥ 30, so the blocked driver and
// its scratch are unchanged; amxMinK keeps every slice that deep.
//
// A non-transposed A needs no packing when kc is a whole number of steps:
// row r of step s is then the 32 values at A[i0+r][p0+32s …], which
// TILELOADD reads in place with the rows' distance as its stride
// (amxBF16At, the kernel's fullAt). kcFor cuts depths of whole steps into
// slices of whole steps, and the driver packs only a short last row
// panel. On the GPT step's forward and input-gradient products this took
// 31–58% more GFLOP per CPU second than packing A (fc1, fc2, dfc1, dqkv
// of BenchmarkGEMMAMXInPlace, one core; qkv within noise).
//
// The kernel runs a whole row of tiles per call (tileRows, amxTilesBF16):
// one tile configuration for all of them, the A panel kept in L1 while
// the B panels stream from L2, each finished tile narrowed to bfloat16 in
// the same call when the product has a bfloat16 C. One tile a call paid
// LDTILECFG and TILERELEASE, about 95 ns, a third of a 256-deep tile.
//
// A beta-0 product with a bias starts each tile's sums from the bias row
// (mode 3: TILELOADD with stride 0 puts it in every row), which is what
// the driver's copy of the bias into C and mode 1 computed, bit for bit.
//
// TDPBF16PS's arithmetic, measured on this machine's Sapphire Rapids class
// CPU (TestAMXKernelEdgesExhaustive, TestAMXKernelModes): see amxDot.

// amxMinK is the least depth GemmHalf runs on the AMX kernel: every kc
// slice of a depth of at least 32 is at least 30 deep (kcFor), so its
// padded panels fit their slots. Shallower products take the pair kernel.
const amxMinK = 32

// amxSteps is the 16-pair steps of a panel of depth k.
func amxSteps(k int) int { return ceilDiv(ceilDiv(k, 2), 16) }

// amxGo is the Go twin of the AMX micro-kernel: the 32×32 tile of C from
// panels a and b of depth k (amxSteps(k) steps), in mode 0 (C = A·B),
// 1 (the sum starts from C) or 2 (C = A·B + beta·C, one rounding).
func amxGo(k int, a, b, c []float32, ldc int, beta float32, mode int) {
	const mr, nr = 32, 32
	kb := amxSteps(k)
	au, bu := words(a[:512*kb]), words(b[:nr*16*kb])
	for r := range mr {
		row := c[r*ldc : r*ldc+nr]
		for j := range row {
			var acc float32
			if mode == 1 {
				acc = row[j]
			}
			for s := range kb {
				acc = amxDot(acc, au[s*512+r*16:s*512+r*16+16], bu[s*16*nr+j:], nr)
			}
			if mode == 2 {
				row[j] = fused32(beta, row[j], acc)
			} else {
				row[j] = acc
			}
		}
	}
}

// amxDot is one C element of one TDPBF16PS: acc plus the 16 pair products
// of a (16 pair words of an A row) and the pair words b[0], b[gap], …
// (a B column), as the hardware computes it (Intel's pseudo-code, and
// TestAMXKernelEdgesExhaustive and TestAMXKernelModes on this machine): the low halves' products and the
// high halves' are each summed in their own float32 lane, in depth
// order, by fused multiply-adds (fmaBF16: nearest even, denormal inputs
// read as zero, denormal results flushed); then the two lanes are added,
// and that sum is added to acc, each add rounded once likewise
// (addFTZ). So a sum of products that overflows one lane is not
// cancelled by the other, and acc joins only at the end of the step.
func amxDot(acc float32, a []uint32, b []uint32, gap int) float32 {
	var lo, hi float32
	for t, x := range a[:16] {
		y := b[t*gap]
		lo = fmaBF16(lo, uint16(x), uint16(y))
		hi = fmaBF16(hi, uint16(x>>16), uint16(y>>16))
	}
	return addFTZ(acc, addFTZ(lo, hi))
}

// addFTZ is x + y in float32 with denormal inputs read as zero and a
// denormal result flushed, rounded to nearest even; a NaN operand is
// returned quieted, x's before y's, and Inf − Inf gives defaultNaN.
func addFTZ(x, y float32) float32 {
	x, y = daz(x), daz(y)
	for _, v := range [2]float32{x, y} {
		if v != v {
			return math.Float32frombits(math.Float32bits(v) | 1<<22)
		}
	}
	if math.IsInf(float64(x), 0) && math.IsInf(float64(y), 0) && x != y {
		return math.Float32frombits(defaultNaN)
	}
	return ftz(x + y)
}

// packAAMX packs the mc×kc block of op(A) at (i0, p0), bfloat16 bits in h,
// into AMX A panels of 32 rows (layout above), zero past row mc and past
// depth kc.
func packAAMX(dst []float32, h []uint16, off, ld int, trans bool, i0, mc, p0, kc int) {
	d := words(dst)
	kb := amxSteps(kc)
	for q := 0; q < mc; q += 32 {
		panel := d[q*kc : q*kc+512*kb]
		rows := min(32, mc-q)
		if trans {
			amxPanelCols(panel, h, off+p0*ld+i0+q, ld, rows, kc)
		} else {
			amxPanelRows(panel, h, off+(i0+q)*ld+p0, ld, rows, kc)
		}
	}
}

// amxPanelRows packs one A panel from rows of op(A) that are contiguous
// runs of depth (op(A) = A): row r's depth p at h[at + r·ld + p]. Each
// step of a row is 32 adjacent values, one 64-byte copy (little-endian:
// the low half of each pair word is the even depth).
func amxPanelRows(panel []uint32, h []uint16, at, ld, rows, kc int) {
	kb := amxSteps(kc)
	for r := range 32 {
		for s := range kb {
			dr := (*[16]uint32)(panel[s*512+r*16 : s*512+r*16+16])
			p := 32 * s
			switch {
			case r >= rows:
				*dr = [16]uint32{}
			case p+32 <= kc:
				src := h[at+r*ld+p : at+r*ld+p+32]
				*dr = *(*[16]uint32)(unsafe.Pointer(&src[0]))
			default:
				for t := range dr {
					dr[t] = amxPairAt(h, at+r*ld, 1, p+2*t, kc)
				}
			}
		}
	}
}

// amxPanelCols packs one A panel from op(A) = Aᵀ, whose depths are
// contiguous runs of rows: row r's depth p at h[at + p·ld + r]. A whole
// step (32 rows, 32 depths) goes to amxStepCols (in assembly where the CPU
// allows); edge steps go value by value.
func amxPanelCols(panel []uint32, h []uint16, at, ld, rows, kc int) {
	for s := range amxSteps(kc) {
		blk := panel[s*512 : s*512+512]
		p0 := 32 * s
		if rows == 32 && p0+32 <= kc {
			if !amxStepColsFast((*[512]uint32)(blk), h, at+p0*ld, ld) {
				amxStepCols((*[512]uint32)(blk), h, at+p0*ld, ld)
			}
			continue
		}
		for t := range 16 {
			for r := range 32 {
				var v uint32
				if r < rows {
					v = amxPairAt(h, at+r, ld, p0+2*t, kc)
				}
				blk[r*16+t] = v
			}
		}
	}
}

// amxStepCols is one whole step of amxPanelCols: depth d of row r at
// h[at + d·ld + r], d and r below 32; pair t of row r is dword r·16 + t.
func amxStepCols(blk *[512]uint32, h []uint16, at, ld int) {
	for t := range 16 {
		lo, hi := h[at+2*t*ld:at+2*t*ld+32], h[at+(2*t+1)*ld:at+(2*t+1)*ld+32]
		for r, x := range lo {
			blk[r*16+t] = uint32(x) | uint32(hi[r])<<16
		}
	}
}

// amxPairAt is the pair word of depths p and p+1 of a line whose depth x
// is h[at + x·ps], each half zero from depth kc on.
func amxPairAt(h []uint16, at, ps, p, kc int) uint32 {
	var v uint32
	if p < kc {
		v = uint32(h[at+p*ps])
	}
	if p+1 < kc {
		v |= uint32(h[at+(p+1)*ps]) << 16
	}
	return v
}

// padBAMX zeroes pair rows ⌈kc/2⌉ … 16·amxSteps(kc)−1 of each of the
// ⌈nc/nr⌉ B panels in d (slots nr·kc words apart).
func padBAMX(d []uint32, nr, kc, nc int) {
	kp, kpad := ceilDiv(kc, 2), 16*amxSteps(kc)
	for q := 0; q < nc; q += nr {
		clear(d[q*kc+kp*nr : q*kc+kpad*nr])
	}
}
