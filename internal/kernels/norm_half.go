package kernels

import "github.com/headroom-ml/headroom/dtype"

// Batch norm over bfloat16 activations. x, y, dy and dx hold bfloat16
// bits; the per-channel operands (w, b, running and saved statistics, dw,
// db) are float32. Every value is the one BatchNorm and BatchNormGrad give
// on the float32 widening of the bfloat16 operands, rounded to bfloat16
// (to nearest even) where the output is bfloat16: the same float64
// arithmetic, the same order of additions. The assembly
// (norm_half_amd64.s) widens in registers; the Go loops (run tails, the
// noasm build) widen bfloat16Chunk elements at a time into a stack
// buffer and run the float32 loops on it.

// BatchNormBF16 is BatchNorm (BatchNormRelu with relu) with x and y
// bfloat16.
func BatchNormBF16(y, x []uint16, w, b, runMean, runVar, mean, invstd []float32, n, c, hw int, training, relu bool, momentum, eps float64) {
	batchNorm(bf16Runs, y, x, w, b, runMean, runVar, mean, invstd, bnShape{n, c, hw}, training, relu, momentum, eps)
}

// BatchNormGradBF16 is BatchNormGrad with dx, dy and x bfloat16; x is
// required (not nil) and dx may be nil.
func BatchNormGradBF16(dx, dy, x []uint16, dw, db, w, mean, invstd []float32, n, c, hw int, training bool) {
	batchNormGrad(bf16Runs, dx, dy, x, dw, db, w, mean, invstd, bnShape{n, c, hw}, training)
}

var bf16Runs = bnRuns[uint16]{
	sum:        sumLanesBF16,
	sqDev:      sqDevBF16,
	dotDev:     dotDevBF16,
	affine:     func(y, x []uint16, scale, shift float64) { affineBF16(y, x, scale, shift, false) },
	affineRelu: func(y, x []uint16, scale, shift float64) { affineBF16(y, x, scale, shift, true) },
	grad:       bnGradRunBF16,
}

// bf16Chunk is how many elements the Go loops widen at a time: a multiple
// of the 16 (and 8) running sums, so that element i of a run still goes
// to sum i mod 16.
const bf16Chunk = 16

// widenChunk widens the bfloat16 s (at most bf16Chunk) into buf.
func widenChunk(buf *[bf16Chunk]float32, s []uint16) []float32 {
	b := buf[:len(s)]
	for i, v := range s {
		b[i] = dtype.BF16ToF32(v)
	}
	return b
}

// narrowChunk rounds v into the bfloat16 d.
func narrowChunk(d []uint16, v []float32) {
	for i, f := range v {
		d[i] = dtype.BF16FromF32(f)
	}
}

// asmBody returns how many leading elements of an n-element run the
// assembly takes (a multiple of mult), 0 without it.
func asmBody(n, mult int) int {
	if !CPU.AVX2FMA {
		return 0
	}
	return n - n%mult
}

// zmmBody returns how many leading elements of an n-element run the
// AVX-512 loops take (a multiple of 16), 0 without AVX-512.
func zmmBody(n int) int {
	if !CPU.AVX512 {
		return 0
	}
	return n &^ 15
}

func sumLanesBF16(acc *[16]float64, x []uint16) {
	k := asmBody(len(x), 16)
	switch {
	case zmmBody(k) > 0:
		vecSumBF16Z(&x[0], k, acc)
	case k > 0:
		vecSumBF16(&x[0], k, acc)
	}
	var buf [bf16Chunk]float32
	for lo := k; lo < len(x); lo += bf16Chunk {
		sumLanes(acc, widenChunk(&buf, x[lo:min(lo+bf16Chunk, len(x))]))
	}
}

func sqDevBF16(acc *[16]float64, x []uint16, mu float64) {
	k := asmBody(len(x), 16)
	switch {
	case zmmBody(k) > 0:
		normSqDevBF16Z(&x[0], k, mu, acc)
	case k > 0:
		normSqDevBF16(&x[0], k, mu, acc)
	}
	var buf [bf16Chunk]float32
	for lo := k; lo < len(x); lo += bf16Chunk {
		sqDev(acc, widenChunk(&buf, x[lo:min(lo+bf16Chunk, len(x))]), mu)
	}
}

func dotDevBF16(a, ax *[8]float64, dy, x []uint16, mu float64) {
	x = x[:len(dy)]
	k := asmBody(len(dy), 8)
	if z := zmmBody(k); z > 0 {
		normDotDevBF16Z(&dy[0], &x[0], z, mu, a, ax)
		dy, x, k = dy[z:], x[z:], k-z // a multiple of 8 left: lanes stay in step
	}
	if k > 0 {
		normDotDevBF16(&dy[0], &x[0], k, mu, a, ax)
	}
	var bg, bx [bf16Chunk]float32
	for lo := k; lo < len(dy); lo += bf16Chunk {
		hi := min(lo+bf16Chunk, len(dy))
		dotDev(a, ax, widenChunk(&bg, dy[lo:hi]), widenChunk(&bx, x[lo:hi]), mu)
	}
}

func affineBF16(y, x []uint16, scale, shift float64, relu bool) {
	y = y[:len(x)]
	k := asmBody(len(x), 8)
	if z := zmmBody(k); z > 0 {
		if relu {
			normAffineReluBF16Z(&y[0], &x[0], z, scale, shift)
		} else {
			normAffineBF16Z(&y[0], &x[0], z, scale, shift)
		}
		y, x, k = y[z:], x[z:], k-z
	}
	switch {
	case k > 0 && relu:
		normAffineReluBF16(&y[0], &x[0], k, scale, shift)
	case k > 0:
		normAffineBF16(&y[0], &x[0], k, scale, shift)
	}
	var bx, by [bf16Chunk]float32
	for lo := k; lo < len(x); lo += bf16Chunk {
		hi := min(lo+bf16Chunk, len(x))
		v := by[:hi-lo]
		if relu {
			affineRelu(v, widenChunk(&bx, x[lo:hi]), scale, shift)
		} else {
			affine(v, widenChunk(&bx, x[lo:hi]), scale, shift)
		}
		narrowChunk(y[lo:hi], v)
	}
}

func bnGradRunBF16(dx, dy, x []uint16, mu, a, b, c float64) {
	dy, x = dy[:len(dx)], x[:len(dx)]
	k := asmBody(len(dx), 8)
	if z := zmmBody(k); z > 0 {
		normGradBF16Z(&dx[0], &dy[0], &x[0], z, mu, a, b, c)
		dx, dy, x, k = dx[z:], dy[z:], x[z:], k-z
	}
	if k > 0 {
		normGradBF16(&dx[0], &dy[0], &x[0], k, mu, a, b, c)
	}
	var bg, bx, bd [bf16Chunk]float32
	for lo := k; lo < len(dx); lo += bf16Chunk {
		hi := min(lo+bf16Chunk, len(dx))
		v := bd[:hi-lo]
		bnGradRun(v, widenChunk(&bg, dy[lo:hi]), widenChunk(&bx, x[lo:hi]), mu, a, b, c)
		narrowChunk(dx[lo:hi], v)
	}
}
