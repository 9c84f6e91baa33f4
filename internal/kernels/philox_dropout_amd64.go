//go:build amd64 && !noasm

package kernels

import (
	"math"
	"unsafe"
)

// dropKeepAsm applies the mask to the leading elements of dst, src and
// words (one length) in assembly and returns how many: a multiple of 16
// (float32) or 8 (float64) on AVX-512, 0 without it or when the
// threshold does not fit 32 bits (p ≥ 1 or NaN, nothing kept).
func dropKeepAsm[T Float](dst, src []T, words []uint32, m dropMask) int {
	if !CPU.AVX512 || m.thr > math.MaxUint32 {
		return 0
	}
	if d, ok := f32s(dst); ok {
		n := len(words) &^ 15
		if n > 0 {
			s, _ := f32s(src)
			dropKeep32AVX512(&d[0], &s[0], &words[0], n, uint32(m.thr), m.scale)
		}
		return n
	}
	n := len(words) &^ 7
	if n > 0 {
		d := unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst))
		s := unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(src))), len(src))
		dropKeep64AVX512(&d[0], &s[0], &words[0], n, uint32(m.thr), m.scale)
	}
	return n
}

// dropKeep32AVX512 writes dst[i] = dropOne(src[i], words[i]) for n, a
// multiple of 16, float32 elements (philox_dropout_amd64.s).
//
//go:noescape
func dropKeep32AVX512(dst, src *float32, words *uint32, n int, thr uint32, scale float64)

// dropKeep64AVX512 is dropKeep32AVX512 for float64, n a multiple of 8.
//
//go:noescape
func dropKeep64AVX512(dst, src *float64, words *uint32, n int, thr uint32, scale float64)
