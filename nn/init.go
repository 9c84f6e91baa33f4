package nn

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// InitKind says how an Init draws a parameter's initial values.
type InitKind uint8

// The kinds of initialisation.
const (
	// InitFill sets every element to A (zeros, batch-norm's weight 1).
	InitFill InitKind = iota
	// InitUniform draws from U[A, B).
	InitUniform
	// InitNormal draws from N(A, B²): mean A, standard deviation B.
	InitNormal
)

// Init is the record of how a builder initialised one tensor: enough to
// produce any range of its elements alone. Element i's value is a pure
// function of (Seed, Stream, i): the builder's seed is the Philox4x32-10
// key and the stream (the index of the draw in build order) is counter
// words 2–3, with the pair index i/2 in counter words 0–1. One Philox
// block gives two 53-bit uniforms u₁ (words 0, 1) and u₂ (words 2, 3):
// under InitUniform elements 2j and 2j+1 are A+(B−A)·u₁ and A+(B−A)·u₂;
// under InitNormal they are the Box–Muller pair A+B·r·cos(2πu₂) and
// A+B·r·sin(2πu₂), r = √(−2·ln(1−u₁)) (1−u₁ is in (0, 1]: no log 0). The
// values are computed in float64 and rounded to the parameter's dtype on
// writing, so a shard written alone equals the same elements of the whole.
type Init struct {
	Kind   InitKind
	A, B   float64
	Seed   uint64
	Stream uint64
}

// InitChunk is the number of elements the builder computes at a time when
// it writes initial values, the kernel workers splitting each chunk. The
// host scratch of writing an Init, whatever the parameter's size, is one
// chunk buffer in the parameter's dtype for F32 (128 KiB) and F64
// (256 KiB); for F16 and BF16 a float64 chunk (256 KiB) that SetFloat64s
// copies and converts (another 256 KiB and 64 KiB). Each worker adds 12 KiB
// on its goroutine stack (initBatch Philox blocks and their float64 pairs).
const InitChunk = 1 << 15

// initGrain is the fewest elements Values hands a kernel worker, and
// initBatch the Philox blocks (pairs) a worker draws at a time: a 4 KiB
// block array and an 8 KiB float64 array on its stack.
const (
	initGrain = 4096
	initBatch = 256
)

// Values writes elements [lo, lo+len(dst)) of the record's values to dst,
// the range split across the kernel workers (each element is a pure
// function of its index, so the split does not change the values).
func (in Init) Values(dst []float64, lo int) { values(in, dst, lo) }

// values is Values writing into float64 or float32 (rounded on writing).
func values[T float32 | float64](in Init, dst []T, lo int) {
	if in.Kind == InitFill {
		for i := range dst {
			dst[i] = T(in.A)
		}
		return
	}
	kernels.ParallelFor(len(dst), initGrain, func(a, b int) { valuesRange(in, dst[a:b], lo+a) })
}

// valuesRange is values on one worker: the pairs covering the range,
// initBatch at a time, the halves of split pairs at its ends dropped.
func valuesRange[T float32 | float64](in Init, dst []T, lo int) {
	var blocks [initBatch][4]uint32
	var pairs [2 * initBatch]float64
	end := lo + len(dst)
	for e := lo; e < end; {
		j := uint64(e) / 2
		m := min(initBatch, int(uint64(end-1)/2-j)+1)
		kernels.PhiloxRange(blocks[:m], j, in.upper(), in.key())
		if in.Kind == InitUniform {
			kernels.PhiloxUniform(pairs[:2*m], blocks[:m], in.A, in.B)
		} else {
			kernels.PhiloxNormal(pairs[:2*m], blocks[:m], in.A, in.B)
		}
		off := e % 2
		cnt := min(2*m-off, end-e)
		for i, v := range pairs[off : off+cnt] {
			dst[e-lo+i] = T(v)
		}
		e += cnt
	}
}

// upper returns Philox counter words 2 and 3 (the stream), key the key
// (the seed).
func (in Init) upper() [2]uint32 { return [2]uint32{uint32(in.Stream), uint32(in.Stream >> 32)} }
func (in Init) key() [2]uint32   { return [2]uint32{uint32(in.Seed), uint32(in.Seed >> 32)} }

// Write writes elements [lo, lo+dst.Len()) of the record's values into
// dst (contiguous; any float dtype), InitChunk elements at a time, each
// chunk computed by the kernel workers. On a device without data (meta)
// it writes nothing.
func (in Init) Write(dst *autograd.Tensor, lo int) {
	if dst.Device().Kernels() == nil {
		return
	}
	if !dst.IsContiguous() {
		panic(&autograd.Error{Op: "nn.init", Msg: fmt.Sprintf("destination %v is not contiguous", dst.Shape())})
	}
	if in.Kind == InitFill {
		dst.Fill(in.A)
		return
	}
	if dst.DType() == dtype.F32 {
		writeChunks(in, dst, lo, (*autograd.Tensor).SetFloat32s)
	} else {
		writeChunks(in, dst, lo, (*autograd.Tensor).SetFloat64s)
	}
}

// writeChunks writes in's values to dst through one host buffer of
// min(InitChunk, dst.Len()) elements of T, with set.
func writeChunks[T float32 | float64](in Init, dst *autograd.Tensor, lo int, set func(*autograd.Tensor, []T)) {
	n := dst.Len()
	v := make([]T, min(n, InitChunk))
	if n <= InitChunk {
		values(in, v, lo)
		set(dst, v)
		return
	}
	flat := dst.Detach()
	defer flat.Release()
	line := flat.Reshape(n)
	defer line.Release()
	for a := 0; a < n; a += InitChunk {
		b := min(a+InitChunk, n)
		part := line.Slice(0, a, b)
		values(in, v[:b-a], lo+a)
		set(part, v[:b-a])
		part.Release()
	}
}
