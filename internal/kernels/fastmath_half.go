package kernels

// The bfloat16 GELU (tanh form) and its gradient, read and written as
// bfloat16: each worker widens halfChunk elements at a time onto its
// stack (halfChunk·4 bytes per operand), runs the float32 kernel on them
// while they are in L1 and rounds the result back, so no float32 copy of
// an operand exists on the heap and no tile scratch is taken. A variant
// that widened and narrowed inside the GELU assembly's registers (one
// pass) measured slower on the AVX-512 development VM (2.8 ms against
// 2.5 ms for the 4096-element tiles, 2^21 elements forward): the chunks
// keep the float32 kernels' interleaved chains (two on AVX2, four on
// AVX-512).

// halfChunk is the elements the loops below widen at a time.
const halfChunk = 256

// GeluTanhBF16 sets dst = GELU (tanh form) of src for bfloat16 slices of
// one length: the bits that widening src, running UnaryFlat(UGeluTanh)
// and narrowing give.
func GeluTanhBF16(dst, src []uint16) {
	src = src[:len(dst)]
	half16For(len(dst), func(lo, hi int) { geluTanhBF16Run(dst[lo:hi], src[lo:hi]) })
}

// GeluTanhGradBF16 sets dx = dy·GELU′(x) (tanh form) for bfloat16 slices
// of one length: the bits of UnaryGrad(UGeluTanh) on the widened slices,
// narrowed.
func GeluTanhGradBF16(dx, dy, x []uint16) {
	dy, x = dy[:len(dx)], x[:len(dx)]
	half16For(len(dx), func(lo, hi int) { geluTanhGradBF16Run(dx[lo:hi], dy[lo:hi], x[lo:hi]) })
}

// geluTanhBF16Run is GeluTanhBF16 on the calling goroutine.
func geluTanhBF16Run(d, s []uint16) {
	var w, r [halfChunk]float32
	for lo := 0; lo < len(d); lo += halfChunk {
		hi := min(lo+halfChunk, len(d))
		x, y := w[:hi-lo], r[:hi-lo]
		bf16ToF32(x, s[lo:hi])
		fastUnaryPart(UGeluTanh, y, x)
		f32ToBF16(d[lo:hi], y)
	}
}

// geluTanhGradBF16Run is GeluTanhGradBF16 on the calling goroutine.
func geluTanhGradBF16Run(d, g, v []uint16) {
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
