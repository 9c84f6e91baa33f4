package kernels

import (
	"fmt"

	"github.com/headroom-ml/headroom/dtype"
)

// Bulk conversions between float32 and the 16-bit float formats.
//
// Each function gives, bit for bit, what the scalar function of package
// dtype gives for every element (dtype.F16FromF32, dtype.F16ToF32,
// dtype.BF16FromF32, dtype.BF16ToF32): round to nearest, ties to even;
// overflow to ±Inf; subnormals exact; a NaN keeps its sign, gets the quiet
// bit when narrowed and keeps its top payload bits, and a bfloat16 NaN
// never becomes Inf. The tests check this over all 65,536 16-bit patterns
// and millions of float32 patterns of every class.
//
// On amd64 with F16C and AVX2 the work is done by assembly (VCVTPS2PH with
// rounding immediate 0, VCVTPH2PS, and AVX2 integer rounding for bfloat16);
// elsewhere, and with the noasm build tag, by package dtype's pure-Go loops.
// Slices of at least convParallelMin elements are split across the worker
// pool.

// convParallelMin is the element count from which a conversion is split
// across workers; convGrain is the smallest piece one worker takes.
const (
	convParallelMin = 1 << 16
	convGrain       = 1 << 15
)

// F32ToF16 stores dtype.F16FromF32(src[i]) in dst[i] for every i. It panics
// if the slices differ in length.
func F32ToF16(dst []uint16, src []float32) {
	convLen("F32ToF16", len(dst), len(src))
	if len(src) < convParallelMin {
		f32ToF16(dst, src)
		return
	}
	convSplit(len(src), func(lo, hi int) { f32ToF16(dst[lo:hi], src[lo:hi]) })
}

// F16ToF32 stores dtype.F16ToF32(src[i]) in dst[i] for every i. It panics
// if the slices differ in length.
func F16ToF32(dst []float32, src []uint16) {
	convLen("F16ToF32", len(dst), len(src))
	if len(src) < convParallelMin {
		f16ToF32(dst, src)
		return
	}
	convSplit(len(src), func(lo, hi int) { f16ToF32(dst[lo:hi], src[lo:hi]) })
}

// F32ToBF16 stores dtype.BF16FromF32(src[i]) in dst[i] for every i. It
// panics if the slices differ in length.
func F32ToBF16(dst []uint16, src []float32) {
	convLen("F32ToBF16", len(dst), len(src))
	if len(src) < convParallelMin {
		f32ToBF16(dst, src)
		return
	}
	convSplit(len(src), func(lo, hi int) { f32ToBF16(dst[lo:hi], src[lo:hi]) })
}

// BF16ToF32 stores dtype.BF16ToF32(src[i]) in dst[i] for every i. It
// panics if the slices differ in length.
func BF16ToF32(dst []float32, src []uint16) {
	convLen("BF16ToF32", len(dst), len(src))
	if len(src) < convParallelMin {
		bf16ToF32(dst, src)
		return
	}
	convSplit(len(src), func(lo, hi int) { bf16ToF32(dst[lo:hi], src[lo:hi]) })
}

// The single-goroutine conversions: the assembly takes whole blocks of 8
// elements and package dtype the rest.

func f32ToF16(dst []uint16, src []float32) {
	k := 0
	if CPU.F16C {
		k = len(src) &^ 7
		if k > 0 {
			f32ToF16Asm(&dst[0], &src[0], k)
		}
	}
	dtype.F32ToF16(dst[k:], src[k:])
}

func f16ToF32(dst []float32, src []uint16) {
	k := 0
	if CPU.F16C {
		k = len(src) &^ 7
		if k > 0 {
			f16ToF32Asm(&dst[0], &src[0], k)
		}
	}
	dtype.F16ToF32s(dst[k:], src[k:])
}

func f32ToBF16(dst []uint16, src []float32) {
	k := 0
	if CPU.AVX2FMA {
		k = len(src) &^ 7
		if k > 0 {
			f32ToBF16Asm(&dst[0], &src[0], k)
		}
	}
	dtype.F32ToBF16(dst[k:], src[k:])
}

func bf16ToF32(dst []float32, src []uint16) {
	k := 0
	if CPU.AVX2FMA {
		k = len(src) &^ 7
		if k > 0 {
			bf16ToF32Asm(&dst[0], &src[0], k)
		}
	}
	dtype.BF16ToF32s(dst[k:], src[k:])
}

// convSplit runs f over [0, n) across workers. The pieces start at
// multiples of 8 elements so that only the last one has a tail.
func convSplit(n int, f func(lo, hi int)) {
	blocks := (n + 7) / 8
	ParallelFor(blocks, convGrain/8, func(lo, hi int) {
		f(lo*8, min(hi*8, n))
	})
}

func convLen(fn string, dst, src int) {
	if dst != src {
		panic(fmt.Sprintf("kernels.%s: len(dst)=%d != len(src)=%d", fn, dst, src))
	}
}
