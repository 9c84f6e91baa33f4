package kernels

import (
	"math"
	"unsafe"
)

// Dropout writes dst[i] = src[i]·keep_i/(1−p) for the elements of a shape in
// row-major order, where element i is kept when the uniform draw at position
// offset+i of seed's stream is ≥ p (PhiloxStream.Uniform). src may be
// strided; dst is laid out by dl. Applying it to the output gradient with
// the same (seed, offset) is dropout's backward.
//
// The words come dropChunk at a time from PhiloxRange (eight or sixteen
// blocks per vector step) into a stack array, and contiguous runs of at
// least dropParallelMin elements are split across the workers: each piece
// draws its own positions, so the result does not depend on the split.
func Dropout[T Float](dst []T, dl Layout, src []T, sl Layout, p float64, seed, offset uint64) {
	m := newDropMask(p, seed)
	if n := dl.Len(); n > 0 && isDense(dl) && isDense(sl) {
		dropoutRun(dst[dl.Off:dl.Off+n], src[sl.Off:sl.Off+n], offset, m)
		return
	}
	pos := offset
	walk(dl.Shape, []Layout{dl, sl}, func(off []int, n int, inc []int) {
		if inc[0] == 1 && inc[1] == 1 {
			dropoutRun(dst[off[0]:off[0]+n], src[off[1]:off[1]+n], pos, m)
		} else {
			dropoutStrided(dst, off[0], inc[0], src, off[1], inc[1], n, pos, m)
		}
		pos += uint64(n)
	})
}

// Contiguous runs of dropParallelMin elements or more are split across the
// workers in pieces of dropGrain; dropChunk is the number of words drawn
// into the stack at a time (4 KiB).
const (
	dropParallelMin = 1 << 14
	dropGrain       = 1 << 13
	dropChunk       = 1024
)

// dropMask holds what every element of one Dropout call shares: element
// with word w is kept when uint64(w) ≥ thr, and scaled by scale.
type dropMask struct {
	key   [2]uint32
	thr   uint64
	scale float64
}

// newDropMask returns the mask of probability p and seed. Uniform24(w) is
// (w>>8)·2⁻²⁴ exactly, so Uniform24(w) ≥ p exactly when w>>8 ≥ ⌈p·2²⁴⌉
// (p·2²⁴ is exact in float64), that is w ≥ ⌈p·2²⁴⌉·2⁸; p ≤ 0 keeps
// every element, p ≥ 1 and NaN none (thr 2³²).
func newDropMask(p float64, seed uint64) dropMask {
	m := dropMask{key: [2]uint32{uint32(seed), uint32(seed >> 32)}, scale: 1 / (1 - p)}
	switch {
	case p <= 0:
		m.thr = 0
	case p < 1:
		m.thr = uint64(math.Ceil(p*(1<<24))) << 8
	default: // p ≥ 1 or NaN
		m.thr = 1 << 32
	}
	return m
}

// isDense reports whether l is row-major contiguous (size-1 dimensions may
// have any stride).
func isDense(l Layout) bool {
	if l.Strides == nil {
		return true
	}
	n := 1
	for i := len(l.Shape) - 1; i >= 0; i-- {
		if l.Shape[i] != 1 && l.Strides[i] != n {
			return false
		}
		n *= l.Shape[i]
	}
	return true
}

// dropoutRun applies the mask to contiguous dst and src of one length from
// stream position pos, across the workers when long.
func dropoutRun[T Float](dst, src []T, pos uint64, m dropMask) {
	if len(dst) < dropParallelMin {
		dropoutDense(dst, src, pos, m)
		return
	}
	claimFor(len(dst), dropGrain, func(lo, hi int) {
		dropoutDense(dst[lo:hi], src[lo:hi], pos+uint64(lo), m)
	})
}

// dropoutDense is dropoutRun on one goroutine, a chunk of words at a time.
func dropoutDense[T Float](dst, src []T, pos uint64, m dropMask) {
	var blocks [dropChunk / 4][4]uint32
	src = src[:len(dst)]
	for len(dst) > 0 {
		words := dropWords(&blocks, pos, len(dst), m.key)
		dropKeep(dst[:len(words)], src[:len(words)], words, m)
		dst, src = dst[len(words):], src[len(words):]
		pos += uint64(len(words))
	}
}

// dropoutStrided applies the mask to n elements of dst (from d, step di)
// and src (from s, step si) from stream position pos.
func dropoutStrided[T Float](dst []T, d, di int, src []T, s, si, n int, pos uint64, m dropMask) {
	var blocks [dropChunk / 4][4]uint32
	for n > 0 {
		words := dropWords(&blocks, pos, n, m.key)
		for _, w := range words {
			dst[d] = dropOne(src[s], w, m)
			d += di
			s += si
		}
		n -= len(words)
		pos += uint64(len(words))
	}
}

// dropWords fills blocks with the Philox blocks that hold the stream words
// from position pos and returns up to n of those words, at most a chunk's
// worth and never past position 2⁶⁴ − 1 (the stream's block counter,
// pos/4, restarts at 0 there while PhiloxRange's would run on).
func dropWords(blocks *[dropChunk / 4][4]uint32, pos uint64, n int, key [2]uint32) []uint32 {
	skip := int(pos % 4)
	n = min(n, dropChunk-skip)
	if left := -pos; left != 0 && uint64(n) > left {
		n = int(left)
	}
	PhiloxRange(blocks[:(skip+n+3)/4], pos/4, [2]uint32{}, key)
	words := unsafe.Slice(&blocks[0][0], dropChunk)
	return words[skip : skip+n]
}

// dropKeep writes dst[i] = dropOne(src[i], words[i]) for slices of one
// length, 16 (float32) or 8 (float64) elements a step on AVX-512.
func dropKeep[T Float](dst, src []T, words []uint32, m dropMask) {
	src = src[:len(words)]
	dst = dst[:len(words)]
	k := dropKeepAsm(dst, src, words, m)
	dropKeepGo(dst[k:], src[k:], words[k:], m)
}

// dropKeepGo is dropKeep in Go (the twin of the assembly).
func dropKeepGo[T Float](dst, src []T, words []uint32, m dropMask) {
	src = src[:len(words)]
	dst = dst[:len(words)]
	for i, w := range words {
		dst[i] = dropOne(src[i], w, m)
	}
}

// dropOne returns x·scale rounded to T when word w keeps it, else +0: the
// product's bits are cleared by a mask made from the sign of w − thr,
// without a branch.
func dropOne[T Float](x T, w uint32, m dropMask) T {
	keep := (uint64(w) - m.thr) >> 63 // 1: dropped
	v := math.Float64bits(float64(x)*m.scale) & (keep - 1)
	return T(math.Float64frombits(v))
}
