package kernels

import (
	"math"
	"unsafe"
)

// Contiguous fast paths of the memory-bound kernels: runs of equal length
// with unit stride, as Binary, Unary, UnaryGrad, Axpy, Fill and Reduce
// find them after coalescing dimensions.
//
// float32 runs use AVX2 assembly when the CPU has it (vec_amd64.s); every
// run has a plain-Go loop that computes the same thing bit for bit: each
// operation is rounded separately (no fused multiply-add; the explicit
// conversions below keep the compiler from fusing), and the vector sum
// adds in the same order in both. Runs of at least vecParallelMin elements
// are split across the worker pool.
//
// An output may be the very same slice as an input (in place), but must
// not otherwise overlap one.

const (
	vecParallelMin = 1 << 16 // elements from which a run is split across workers
	vecGrain       = 1 << 15 // the smallest piece a worker takes
)

// ntMinBytes is the output size from which a run that does not write in
// place is stored with non-temporal stores: an output that large (with
// its inputs) cannot stay in the 32 MiB L3 anyway, and bypassing the
// cache saves reading every output line before writing it. (A variable
// so that the tests can send small runs down that path too.)
var ntMinBytes = 16 << 20

// f32s reinterprets a []T as []float32 when T is 4 bytes wide (float32 or
// a type defined on it), and reports whether it did.
func f32s[T Float](s []T) ([]float32, bool) {
	var z T
	if unsafe.Sizeof(z) != 4 {
		return nil, false
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(s))), len(s)), true
}

// useNT reports whether a run writing out, not in place over any of ins,
// takes non-temporal stores.
func useNT[T Float](out []T, ins ...[]T) bool {
	var z T
	if len(out)*int(unsafe.Sizeof(z)) < ntMinBytes {
		return false
	}
	for _, in := range ins {
		if unsafe.SliceData(in) == unsafe.SliceData(out) {
			return false
		}
	}
	return true
}

// vecSpan splits a float32 run of n elements whose output starts at p into
// a head [0, h) and a tail [h+k, n) for Go and a body [h, h+k) for the
// assembly, k a multiple of 8. With nt the head makes the body's output
// 32-byte aligned, as non-temporal stores need.
func vecSpan(p unsafe.Pointer, n int, nt bool) (h, k int) {
	if nt {
		h = min(n, int((32-uintptr(p)%32)%32/4))
	}
	return h, (n - h) &^ 7
}

// binaryRun sets d = a op b elementwise for op BAdd, BSub or BMul; a and b
// hold at least len(d) elements.
func binaryRun[T Float](op int, d, a, b []T) {
	n := len(d)
	a, b = a[:n], b[:n]
	nt := useNT(d, a, b)
	if n < vecParallelMin {
		binaryPart(op, d, a, b, nt)
		return
	}
	ParallelFor(n, vecGrain, func(lo, hi int) { binaryPart(op, d[lo:hi], a[lo:hi], b[lo:hi], nt) })
}

func binaryPart[T Float](op int, d, a, b []T, nt bool) {
	h, k := 0, 0
	if d32, ok := f32s(d); ok && CPU.AVX2FMA {
		h, k = vecSpan(unsafe.Pointer(unsafe.SliceData(d)), len(d), nt)
		if k > 0 {
			a32, _ := f32s(a)
			b32, _ := f32s(b)
			dp, ap, bp := &d32[h], &a32[h], &b32[h]
			switch {
			case op == BAdd && nt:
				vecAddF32NT(dp, ap, bp, k)
			case op == BAdd:
				vecAddF32(dp, ap, bp, k)
			case op == BSub && nt:
				vecSubF32NT(dp, ap, bp, k)
			case op == BSub:
				vecSubF32(dp, ap, bp, k)
			case op == BMul && nt:
				vecMulF32NT(dp, ap, bp, k)
			case op == BMul:
				vecMulF32(dp, ap, bp, k)
			}
		}
	}
	binaryGo(op, d[:h], a[:h], b[:h])
	binaryGo(op, d[h+k:], a[h+k:], b[h+k:])
}

func binaryGo[T Float](op int, d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	switch op {
	case BAdd:
		for i := range d {
			d[i] = a[i] + b[i]
		}
	case BSub:
		for i := range d {
			d[i] = a[i] - b[i]
		}
	case BMul:
		for i := range d {
			d[i] = a[i] * b[i]
		}
	default:
		panic("kernels: binaryRun of an op other than add, sub, mul")
	}
}

// axpyRun adds alpha·x to y elementwise, the product rounded before the
// sum; x holds at least len(y) elements. y is written in place, so there
// is no non-temporal variant.
func axpyRun[T Float](alpha T, x, y []T) {
	n := len(y)
	x = x[:n]
	if n < vecParallelMin {
		axpyPart(alpha, x, y)
		return
	}
	ParallelFor(n, vecGrain, func(lo, hi int) { axpyPart(alpha, x[lo:hi], y[lo:hi]) })
}

func axpyPart[T Float](alpha T, x, y []T) {
	k := 0
	if y32, ok := f32s(y); ok && CPU.AVX2FMA {
		k = len(y) &^ 7
		if k > 0 {
			x32, _ := f32s(x)
			vecAxpyF32(&y32[0], &x32[0], float32(alpha), k)
		}
	}
	x, y = x[k:len(y)], y[k:]
	for i := range y {
		y[i] += T(alpha * x[i])
	}
}

// scaleRun sets d = s·alpha elementwise; s holds at least len(d) elements.
func scaleRun[T Float](d, s []T, alpha T) {
	n := len(d)
	s = s[:n]
	nt := useNT(d, s)
	if n < vecParallelMin {
		scalePart(d, s, alpha, nt)
		return
	}
	ParallelFor(n, vecGrain, func(lo, hi int) { scalePart(d[lo:hi], s[lo:hi], alpha, nt) })
}

func scalePart[T Float](d, s []T, alpha T, nt bool) {
	h, k := 0, 0
	if d32, ok := f32s(d); ok && CPU.AVX2FMA {
		h, k = vecSpan(unsafe.Pointer(unsafe.SliceData(d)), len(d), nt)
		if k > 0 {
			s32, _ := f32s(s)
			if nt {
				vecScaleF32NT(&d32[h], &s32[h], float32(alpha), k)
			} else {
				vecScaleF32(&d32[h], &s32[h], float32(alpha), k)
			}
		}
	}
	scaleGo(d[:h], s[:h], alpha)
	scaleGo(d[h+k:], s[h+k:], alpha)
}

func scaleGo[T Float](d, s []T, alpha T) {
	s = s[:len(d)]
	for i := range d {
		d[i] = s[i] * alpha
	}
}

// reluRun sets d = s where s > 0 and +0 elsewhere (NaN and -0 included);
// s holds at least len(d) elements.
func reluRun[T Float](d, s []T) {
	n := len(d)
	s = s[:n]
	nt := useNT(d, s)
	if n < vecParallelMin {
		reluPart(d, s, nt)
		return
	}
	ParallelFor(n, vecGrain, func(lo, hi int) { reluPart(d[lo:hi], s[lo:hi], nt) })
}

func reluPart[T Float](d, s []T, nt bool) {
	h, k := 0, 0
	if d32, ok := f32s(d); ok && CPU.AVX2FMA {
		h, k = vecSpan(unsafe.Pointer(unsafe.SliceData(d)), len(d), nt)
		if k > 0 {
			s32, _ := f32s(s)
			if nt {
				vecReluF32NT(&d32[h], &s32[h], k)
			} else {
				vecReluF32(&d32[h], &s32[h], k)
			}
		}
	}
	reluGo(d[:h], s[:h])
	reluGo(d[h+k:], s[h+k:])
}

// reluGo is the Go loop of reluRun. It masks the bits rather than
// branching: with signs at random a branch mispredicts half the time and
// runs five times slower.
func reluGo[T Float](d, s []T) {
	s = s[:len(d)]
	if d32, ok := f32s(d); ok {
		s32, _ := f32s(s)
		for i := range d32 {
			v := s32[i]
			var keep uint32
			if v > 0 {
				keep = 1<<32 - 1
			}
			d32[i] = math.Float32frombits(math.Float32bits(v) & keep)
		}
		return
	}
	for i := range d {
		v := float64(s[i])
		var keep uint64
		if v > 0 {
			keep = 1<<64 - 1
		}
		d[i] = T(math.Float64frombits(math.Float64bits(v) & keep))
	}
}

// reluGradRun sets dx = dy where y > 0 and +0 elsewhere; dy and y hold at
// least len(dx) elements.
func reluGradRun[T Float](dx, dy, y []T) {
	n := len(dx)
	dy, y = dy[:n], y[:n]
	nt := useNT(dx, dy, y)
	if n < vecParallelMin {
		reluGradPart(dx, dy, y, nt)
		return
	}
	ParallelFor(n, vecGrain, func(lo, hi int) { reluGradPart(dx[lo:hi], dy[lo:hi], y[lo:hi], nt) })
}

func reluGradPart[T Float](dx, dy, y []T, nt bool) {
	h, k := 0, 0
	if dx32, ok := f32s(dx); ok && CPU.AVX2FMA {
		h, k = vecSpan(unsafe.Pointer(unsafe.SliceData(dx)), len(dx), nt)
		if k > 0 {
			dy32, _ := f32s(dy)
			y32, _ := f32s(y)
			if nt {
				vecReluGradF32NT(&dx32[h], &dy32[h], &y32[h], k)
			} else {
				vecReluGradF32(&dx32[h], &dy32[h], &y32[h], k)
			}
		}
	}
	reluGradGo(dx[:h], dy[:h], y[:h])
	reluGradGo(dx[h+k:], dy[h+k:], y[h+k:])
}

// reluGradGo is the Go loop of reluGradRun, branch-free as reluGo.
func reluGradGo[T Float](dx, dy, y []T) {
	dy, y = dy[:len(dx)], y[:len(dx)]
	if dx32, ok := f32s(dx); ok {
		dy32, _ := f32s(dy)
		y32, _ := f32s(y)
		for i := range dx32 {
			var keep uint32
			if y32[i] > 0 {
				keep = 1<<32 - 1
			}
			dx32[i] = math.Float32frombits(math.Float32bits(dy32[i]) & keep)
		}
		return
	}
	for i := range dx {
		var keep uint64
		if y[i] > 0 {
			keep = 1<<64 - 1
		}
		dx[i] = T(math.Float64frombits(math.Float64bits(float64(dy[i])) & keep))
	}
}

// fillRun sets every element of s to v. Plain numeric element types of 1,
// 2, 4 or 8 bytes take the vector path; anything else (and anything that
// may hold pointers, which must be written through Go) takes the loop.
func fillRun[T any](s []T, v T) {
	switch any(v).(type) {
	case float64, float32, int64, int32, int16, int8, uint64, uint32, uint16, uint8:
	default:
		for i := range s {
			s[i] = v
		}
		return
	}
	size := int(unsafe.Sizeof(v))
	nt := len(s)*size >= ntMinBytes
	if len(s)*size < vecParallelMin*4 {
		fillPart(s, v, nt)
		return
	}
	ParallelFor(len(s), vecGrain*4/size, func(lo, hi int) { fillPart(s[lo:hi], v, nt) })
}

// fillPart fills s with v; the assembly stores a 32-byte pattern of
// copies of v, from the first 32-byte boundary when nt.
func fillPart[T any](s []T, v T, nt bool) {
	h, k := 0, 0
	if CPU.AVX2FMA && len(s) > 0 {
		size := int(unsafe.Sizeof(v))
		p := unsafe.Pointer(unsafe.SliceData(s))
		if nt {
			h = min(len(s), int((32-uintptr(p)%32)%32)/size)
		}
		k = (len(s) - h) * size &^ 31 / size
		if k > 0 {
			var pat [32]byte
			for i := 0; i < 32; i += size {
				copy(pat[i:i+size], unsafe.Slice((*byte)(unsafe.Pointer(&v)), size))
			}
			b := (*byte)(unsafe.Pointer(&s[h]))
			if nt {
				vecFill32BNT(b, &pat, k*size)
			} else {
				vecFill32B(b, &pat, k*size)
			}
		}
	}
	for i := range h {
		s[i] = v
	}
	for i := h + k; i < len(s); i++ {
		s[i] = v
	}
}

// sumChunk is the number of elements summed as one unit of the parallel
// sum; partial sums combine in chunk order, so the result does not depend
// on the number of workers.
const sumChunk = 1 << 16

// sumRun returns Σ s[i] in float64. The order is fixed: within a chunk of
// sumChunk elements, 16 running sums take every 16th element (sum j gets
// s[16q + j]), are added j = 0..15 in turn, and the last len%16 elements
// follow one by one; chunk sums are added in order.
func sumRun[T Float](s []T) float64 {
	n := len(s)
	if n <= sumChunk {
		return sumPart(s)
	}
	chunks := (n + sumChunk - 1) / sumChunk
	parts := make([]float64, chunks)
	ParallelFor(chunks, 1, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			parts[c] = sumPart(s[c*sumChunk : min((c+1)*sumChunk, n)])
		}
	})
	var t float64
	for _, p := range parts {
		t += p
	}
	return t
}

// sumPart sums one chunk in the order sumRun documents.
func sumPart[T Float](s []T) float64 {
	var acc [16]float64
	k := len(s) &^ 15
	switch s32, ok := f32s(s); {
	case k == 0:
	case ok && CPU.AVX2FMA:
		vecSumF32(&s32[0], k, &acc)
	case !ok && CPU.AVX2FMA:
		vecSumF64((*float64)(unsafe.Pointer(&s[0])), k, &acc)
	default:
		for i := 0; i < k; i += 16 {
			b := s[i : i+16]
			for j := range acc {
				acc[j] += float64(b[j])
			}
		}
	}
	var t float64
	for _, a := range acc {
		t += a
	}
	for _, v := range s[k:] {
		t += float64(v)
	}
	return t
}
