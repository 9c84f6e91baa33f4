package kernels

import (
	"sync"
	"unsafe"
)

// Packing copies a block of op(A) or op(B) into the order the micro-kernel
// reads it, so that the kernel's loads are unit-stride whatever the
// transposes and leading dimensions, and the edge panels are padded with
// zeros to a full tile.
//
// Packed A (mc×kc block of op(A), rows i0.., depth p0..): ⌈mc/mr⌉ panels,
// panel q holding rows q·mr.. as kc groups of mr values (k-major), alpha
// already applied:
//
//	dst[q·mr·kc + p·mr + r] = alpha·op(A)[i0+q·mr+r][p0+p]   (0 past row mc)
//
// Packed B (kc×nc block of op(B), depth p0.., columns j0..): ⌈nc/nr⌉ panels
// of kc groups of nr values:
//
//	dst[q·nr·kc + p·nr + c] = op(B)[p0+p][j0+q·nr+c]   (0 past column nc)
//
// Whole packed B (all of a K×N op(B), wholeBSize values): the kc slices
// the driver cuts K into (kcFor), slice by slice, each ⌈N/nr⌉ panels of
// kc groups of nr as above, so that the slice at depth pc starts at
// pc·roundUp(N, nr) — the driver's own packed B when N fits one block.
//
// A 16-bit operand is converted to float32 here, strip by strip, so it never
// needs a full-size float32 copy.

// operand is one GEMM input: a slice of T, or (T float32 only) 16-bit float
// bit patterns, bfloat16 when bf16 is set and IEEE binary16 otherwise.
type operand[T Float] struct {
	f    []T
	h    []uint16
	bf16 bool
}

// halfToF32 widens 16-bit floats exactly, with the single-goroutine
// conversions of convert.go (assembly where the CPU allows).
func halfToF32(dst []float32, src []uint16, bf16 bool) {
	if bf16 {
		bf16ToF32(dst, src)
	} else {
		f16ToF32(dst, src)
	}
}

// packA packs the mc×kc block of op(A) at (i0, p0) into dst, scaled by
// alpha, in panels of kn.mr rows; strip is float32 scratch of at least
// max(mc, kc) elements for 16-bit sources. op(A)[i][p] is src[off+i·ld+p],
// or src[off+p·ld+i] when trans.
func packA[T Float](kn *gemmKernel[T], dst []T, src operand[T], off, ld int, trans bool, i0, mc, p0, kc int, alpha T, strip []float32) {
	if kn.amx {
		packAAMX(as[float32](dst), src.h, off, ld, trans, i0, mc, p0, kc)
		return
	}
	if kn.pairs {
		packAPairs(kn, dst, src, off, ld, trans, i0, mc, p0, kc)
		return
	}
	mr := kn.mr
	if !trans {
		for q := 0; q < mc; q += mr {
			rows := min(mr, mc-q)
			d := dst[q*kc : q*kc+mr*kc]
			at := off + (i0+q)*ld + p0
			switch {
			case src.h != nil && rows == mr && kn.packA != nil:
				packRowsHalfWide(kn, d, src, strip, at, ld, kc, alpha)
			case src.h != nil:
				packRowsHalf(d, src, strip, at, ld, kc, rows, mr, alpha)
			case rows == mr && kn.packA != nil:
				kn.packA(d, src.f, at, ld, kc, alpha)
			default:
				packRowsOf(d, src.f, at, ld, kc, rows, mr, alpha)
			}
		}
		return
	}
	// op(A) = Aᵀ: each depth p is a contiguous run of mc values.
	if kn.packAT != nil && src.h == nil {
		q := 0
		for ; q+mr <= mc; q += mr {
			kn.packAT(dst[q*kc:q*kc+mr*kc], src.f, off+p0*ld+i0+q, ld, kc, alpha)
		}
		if q == mc {
			return
		}
		// The edge panel, by the loop below.
		dst, i0, mc = dst[q*kc:], i0+q, mc-q
	}
	for p := range kc {
		at := off + (p0+p)*ld + i0
		var row []T
		if src.h != nil {
			s := strip[:mc]
			halfToF32(s, src.h[at:at+mc], src.bf16)
			for q := 0; q < mc; q += mr {
				rows := min(mr, mc-q)
				d := dst[q*kc+p*mr : q*kc+p*mr+mr]
				for r, v := range s[q : q+rows] {
					d[r] = alpha * T(v)
				}
				clear(d[rows:])
			}
			continue
		}
		row = src.f[at : at+mc]
		for q := 0; q < mc; q += mr {
			rows := min(mr, mc-q)
			d := dst[q*kc+p*mr : q*kc+p*mr+mr]
			for r, v := range row[q : q+rows] {
				d[r] = alpha * v
			}
			clear(d[rows:])
		}
	}
}

// packB packs the kc×nc block of op(B) at (p0, j0) into dst, in panels of
// kn.nr columns; strip is as for packA but of at least max(kc, nr)
// elements. op(B)[p][j] is src[off+p·ld+j], or src[off+j·ld+p] when trans.
func packB[T Float](kn *gemmKernel[T], dst []T, src operand[T], off, ld int, trans bool, p0, kc, j0, nc int, strip []float32) {
	if kn.pairs {
		packBPairs(kn, dst, src, off, ld, trans, p0, kc, j0, nc)
		if kn.amx {
			padBAMX(words(as[float32](dst)), kn.nr, kc, nc)
		}
		return
	}
	nr := kn.nr
	for q := 0; q < nc; q += nr {
		cols := min(nr, nc-q)
		d := dst[q*kc : q*kc+nr*kc]
		switch {
		case !trans && cols == nr && kn.packB != nil && src.h == nil:
			kn.packB(d, src.f, off+p0*ld+j0+q, ld, kc)
		case !trans && cols == nr && src.h != nil:
			widenRows(as[float32](d), src.h, off+p0*ld+j0+q, ld, kc, nr, src.bf16)
		case !trans:
			// Each depth p is a contiguous run of cols values.
			for p := range kc {
				at := off + (p0+p)*ld + j0 + q
				dp := d[p*nr : p*nr+nr]
				if src.h != nil {
					s := strip[:cols]
					halfToF32(s, src.h[at:at+cols], src.bf16)
					for x, v := range s {
						dp[x] = T(v)
					}
				} else {
					copy(dp, src.f[at:at+cols])
				}
				clear(dp[cols:])
			}
		case cols == nr && kn.packBT != nil && src.h == nil:
			// op(B) = Bᵀ: each column j is a contiguous run of kc values.
			kn.packBT(d, src.f, off+(j0+q)*ld+p0, ld, kc)
		case cols == nr && src.h != nil:
			widenCols(as[float32](d), src.h, off+(j0+q)*ld+p0, ld, kc, nr, src.bf16)
		default:
			c8 := 0
			if src.h == nil { // whole groups of eight runs, as the full panels' Go packer
				for ; c8+8 <= cols; c8 += 8 {
					packCols8(d[c8:], src.f, off+(j0+q+c8)*ld+p0, ld, kc, nr)
				}
			}
			for c := c8; c < cols; c++ {
				at := off + (j0+q+c)*ld + p0
				if src.h != nil {
					s := strip[:kc]
					halfToF32(s, src.h[at:at+kc], src.bf16)
					for p, v := range s {
						d[p*nr+c] = T(v)
					}
					continue
				}
				for p, v := range src.f[at : at+kc] {
					d[p*nr+c] = v
				}
			}
			clearTail(d, nr, cols, kc)
		}
	}
}

// wholeBSize is the values of a whole packed K×N op(B) for kn.
func wholeBSize[T Float](kn *gemmKernel[T], k, n int) int { return roundUp(n, kn.nr) * k }

// packRowsOf writes rows (at most mr) rows of kc values, ld apart from
// src[at:], times alpha, into d as kc groups of mr, zero past row rows:
// depth by depth, so that d is written in order. It packs the edge panels
// of op(A) = A and the full ones of kernels without a packer.
func packRowsOf[T Float](d, src []T, at, ld, kc, rows, mr int, alpha T) {
	for p := range kc {
		g := d[p*mr : p*mr+mr : p*mr+mr]
		x := at + p
		for r := range rows {
			g[r] = alpha * src[x]
			x += ld
		}
		for r := rows; r < mr; r++ {
			g[r] = 0
		}
	}
}

// packRowsHalf is packRowsOf for 16-bit rows, widened row by row through
// strip (at least kc values).
func packRowsHalf[T Float](d []T, src operand[T], strip []float32, at, ld, kc, rows, mr int, alpha T) {
	s := strip[:kc]
	for r := range rows {
		halfToF32(s, src.h[at+r*ld:at+r*ld+kc], src.bf16)
		for p, v := range s {
			d[p*mr+r] = alpha * T(v)
		}
	}
	clearTail(d, mr, rows, kc)
}

// clearTail zeroes values from..w-1 of each of the k groups of w in d.
func clearTail[T Float](d []T, w, from, k int) {
	if from == w {
		return
	}
	for p := range k {
		clear(d[p*w+from : p*w+w])
	}
}

// packRows6 interleaves six rows of kc values, ld apart from src[at:],
// into d as kc groups of six, scaled by alpha: one pass over the rows,
// writing d in order. It is the Go packer of full panels for mr = 6.
func packRows6[T Float](d, src []T, at, ld, kc int, alpha T) {
	packRows6Of(d, src, at, ld, kc, 6, alpha)
}

// packRows12 is the Go packer of full panels for mr = 12: rows 0..5 and
// 6..11 of each group of twelve, each half in one pass.
func packRows12[T Float](d, src []T, at, ld, kc int, alpha T) {
	packRows6Of(d, src, at, ld, kc, 12, alpha)
	packRows6Of(d[6:], src, at+6*ld, ld, kc, 12, alpha)
}

// packRows6Of writes six rows of kc values, ld apart from src[at:], times
// alpha, into d as kc groups of six, the groups mr apart.
func packRows6Of[T Float](d, src []T, at, ld, kc, mr int, alpha T) {
	r0 := src[at : at+kc]
	r1 := src[at+ld:][:len(r0)]
	r2 := src[at+2*ld:][:len(r0)]
	r3 := src[at+3*ld:][:len(r0)]
	r4 := src[at+4*ld:][:len(r0)]
	r5 := src[at+5*ld:][:len(r0)]
	for p := range r0 {
		g := d[mr*p : mr*p+6 : mr*p+6]
		g[0] = alpha * r0[p]
		g[1] = alpha * r1[p]
		g[2] = alpha * r2[p]
		g[3] = alpha * r3[p]
		g[4] = alpha * r4[p]
		g[5] = alpha * r5[p]
	}
}

// packCols8 gathers eight runs of kc values, ld apart from src[at:], into
// d as kc groups of eight, the groups nr apart.
func packCols8[T Float](d, src []T, at, ld, kc, nr int) {
	c0 := src[at : at+kc]
	c1 := src[at+ld:][:len(c0)]
	c2 := src[at+2*ld:][:len(c0)]
	c3 := src[at+3*ld:][:len(c0)]
	c4 := src[at+4*ld:][:len(c0)]
	c5 := src[at+5*ld:][:len(c0)]
	c6 := src[at+6*ld:][:len(c0)]
	c7 := src[at+7*ld:][:len(c0)]
	for p := range c0 {
		g := d[nr*p : nr*p+8 : nr*p+8]
		g[0], g[1], g[2], g[3] = c0[p], c1[p], c2[p], c3[p]
		g[4], g[5], g[6], g[7] = c4[p], c5[p], c6[p], c7[p]
	}
}

// packCols16 is the Go packer of full op(B) = Bᵀ panels for nr = 16.
func packCols16[T Float](d, src []T, at, ld, kc int) {
	packCols8(d, src, at, ld, kc, 16)
	packCols8(d[8:], src, at+8*ld, ld, kc, 16)
}

// packCols32 is the Go packer of full op(B) = Bᵀ panels for nr = 32.
func packCols32[T Float](d, src []T, at, ld, kc int) {
	for c := 0; c < 32; c += 8 {
		packCols8(d[c:], src, at+c*ld, ld, kc, 32)
	}
}

// packCols8x8 is the Go packer of full op(B) = Bᵀ panels for nr = 8.
func packCols8x8[T Float](d, src []T, at, ld, kc int) {
	packCols8(d, src, at, ld, kc, 8)
}

// gemmScratch is one worker's packing space, reused across calls: raw
// 64-byte-aligned bytes viewed as the element type in use. It is CPU
// implementation scratch, like a stack, not tensor memory.
type gemmScratch struct {
	a, b, tile, strip []byte
}

// scratchView returns n elements of T over *buf, growing it when needed, at
// a 64-byte boundary so that packed rows of B fill whole cache lines.
func scratchView[T any](buf *[]byte, n int) []T {
	var z T
	size := n * int(unsafe.Sizeof(z))
	if cap(*buf) < size+64 {
		*buf = make([]byte, size+64)
	}
	b := (*buf)[:cap(*buf)]
	skip := int((64 - uintptr(unsafe.Pointer(&b[0]))%64) % 64)
	return unsafe.Slice((*T)(unsafe.Pointer(&b[skip])), n)
}

// freeList is a mutex-guarded stack of reusable objects. Unlike sync.Pool
// it never drops what it holds (the race detector makes sync.Pool drop
// items at random), so calls in steady state do not allocate.
type freeList[E any] struct {
	mu   sync.Mutex
	free []*E
}

func (l *freeList[E]) get() *E {
	l.mu.Lock()
	if n := len(l.free); n > 0 {
		e := l.free[n-1]
		l.free = l.free[:n-1]
		l.mu.Unlock()
		return e
	}
	l.mu.Unlock()
	return new(E)
}

func (l *freeList[E]) put(e *E) {
	l.mu.Lock()
	l.free = append(l.free, e)
	l.mu.Unlock()
}

// scratches holds the packing space of every worker that has run a GEMM.
var scratches freeList[gemmScratch]
