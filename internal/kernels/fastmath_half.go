package kernels

// GeluTanhBF16 sets dst = GELU (tanh form) of src for bfloat16 slices of
// one length: each element widened, put through geluTanh32 and rounded to
// bfloat16, the bits that widening the slice, running UnaryFlat(UGeluTanh)
// and narrowing give, without a float32 copy of either (the assembly
// widens and narrows in registers).
func GeluTanhBF16(dst, src []uint16) {
	src = src[:len(dst)]
	half16For(len(dst), func(lo, hi int) {
		d, s := dst[lo:hi], src[lo:hi]
		k := 0
		if CPU.AVX2FMA {
			if k = len(d) &^ 7; k > 0 {
				geluTanhBF16(&d[0], &s[0], k)
			}
		}
		geluTanhBF16Go(d[k:], s[k:])
	})
}

// GeluTanhGradBF16 sets dx = dy·GELU′(x) (tanh form) for bfloat16 slices
// of one length, in float32 on the widenings and rounded once: the bits of
// UnaryGrad(UGeluTanh) on the widened slices, narrowed.
func GeluTanhGradBF16(dx, dy, x []uint16) {
	dy, x = dy[:len(dx)], x[:len(dx)]
	half16For(len(dx), func(lo, hi int) {
		d, g, v := dx[lo:hi], dy[lo:hi], x[lo:hi]
		k := 0
		if CPU.AVX2FMA {
			if k = len(d) &^ 7; k > 0 {
				geluTanhGradBF16(&d[0], &g[0], &v[0], k)
			}
		}
		geluTanhGradBF16Go(d[k:], g[k:], v[k:])
	})
}

// halfChunk is the elements the Go loops below widen at a time, on the
// stack (1 KiB of float32 per operand).
const halfChunk = 256

// geluTanhBF16Go is GeluTanhBF16 without the assembly: a chunk at a time
// widened on the stack and put through the float32 kernel, so that the
// bits (NaN payloads included) are that kernel's by construction.
func geluTanhBF16Go(d, s []uint16) {
	var w, r [halfChunk]float32
	for lo := 0; lo < len(d); lo += halfChunk {
		hi := min(lo+halfChunk, len(d))
		x, y := w[:hi-lo], r[:hi-lo]
		bf16ToF32(x, s[lo:hi])
		fastUnaryPart(UGeluTanh, y, x)
		f32ToBF16(d[lo:hi], y)
	}
}

// geluTanhGradBF16Go is GeluTanhGradBF16 without the assembly, as
// geluTanhBF16Go.
func geluTanhGradBF16Go(d, g, v []uint16) {
	var wg, wv, r [halfChunk]float32
	for lo := 0; lo < len(d); lo += halfChunk {
		hi := min(lo+halfChunk, len(d))
		dy, x, dx := wg[:hi-lo], wv[:hi-lo], r[:hi-lo]
		bf16ToF32(dy, g[lo:hi])
		bf16ToF32(x, v[lo:hi])
		geluTanhGradRun(dx, dy, x)
		f32ToBF16(d[lo:hi], dx)
	}
}
