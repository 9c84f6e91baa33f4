package nn

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
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
// it writes initial values: the host scratch of writing an Init is one
// float64 buffer of InitChunk elements (256 KiB) plus its conversion to
// the parameter's dtype (at most as large), whatever the parameter's size.
const InitChunk = 1 << 15

// initGrain is the fewest elements Values hands a kernel worker, and
// initBatch the Philox blocks (pairs) a worker draws at a time, in a
// 4 KiB array on its stack.
const (
	initGrain = 4096
	initBatch = 256
)

// Values writes elements [lo, lo+len(dst)) of the record's values to dst,
// the range split across the kernel workers (each element is a pure
// function of its index, so the split does not change the values).
func (in Init) Values(dst []float64, lo int) {
	if in.Kind == InitFill {
		for i := range dst {
			dst[i] = in.A
		}
		return
	}
	kernels.ParallelFor(len(dst), initGrain, func(a, b int) { in.values(dst[a:b], lo+a) })
}

// values is Values on one worker: a split pair at either end alone, the
// whole pairs between initBatch Philox blocks at a time.
func (in Init) values(dst []float64, lo int) {
	k := 0
	if lo%2 == 1 && len(dst) > 0 {
		dst[0] = in.pair(uint64(lo) / 2)[1]
		k = 1
	}
	var blocks [initBatch][4]uint32
	for len(dst)-k >= 2 {
		m := min(initBatch, (len(dst)-k)/2)
		kernels.PhiloxRange(blocks[:m], uint64(lo+k)/2, in.upper(), in.key())
		in.mapBlocks(dst[k:k+2*m], blocks[:m])
		k += 2 * m
	}
	if k < len(dst) {
		dst[k] = in.pair(uint64(lo+k) / 2)[0]
	}
}

// pair returns elements 2j and 2j+1.
func (in Init) pair(j uint64) [2]float64 {
	u := in.upper()
	w := [1][4]uint32{kernels.Philox4x32([4]uint32{uint32(j), uint32(j >> 32), u[0], u[1]}, in.key())}
	var p [2]float64
	in.mapBlocks(p[:], w[:])
	return p
}

// upper returns Philox counter words 2 and 3 (the stream), key the key
// (the seed).
func (in Init) upper() [2]uint32 { return [2]uint32{uint32(in.Stream), uint32(in.Stream >> 32)} }
func (in Init) key() [2]uint32   { return [2]uint32{uint32(in.Seed), uint32(in.Seed >> 32)} }

// mapBlocks maps Philox blocks to their pairs of elements.
func (in Init) mapBlocks(dst []float64, blocks [][4]uint32) {
	if in.Kind == InitUniform {
		kernels.PhiloxUniform(dst, blocks, in.A, in.B)
	} else {
		kernels.PhiloxNormal(dst, blocks, in.A, in.B)
	}
}

// Write writes elements [lo, lo+dst.Len()) of the record's values into
// dst (contiguous; any float dtype), InitChunk elements at a time. On a
// device without data (meta) it writes nothing.
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
	n := dst.Len()
	if n <= InitChunk {
		v := make([]float64, n)
		in.Values(v, lo)
		dst.SetFloat64s(v)
		return
	}
	flat := dst.Detach()
	defer flat.Release()
	line := flat.Reshape(n)
	defer line.Release()
	v := make([]float64, InitChunk)
	for a := 0; a < n; a += InitChunk {
		b := min(a+InitChunk, n)
		part := line.Slice(0, a, b)
		in.Values(v[:b-a], lo+a)
		part.SetFloat64s(v[:b-a])
		part.Release()
	}
}
