package cpu

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Widening. Kernels that compute in F32 (or F64) get the operand's
// elements in that precision: an operand of the compute dtype is used in
// place, over its whole block; any other is converted, but only over its
// extent, the range of block elements its view can reach ([lo, hi): from
// the offset of its first element to one past its last, whatever the
// strides), so a small view of a large block (a parameter inside one flat
// buffer) costs its own size, not the block's. Outputs are converted back
// over the same extent. The copy lives on the Go heap for the one call:
// 4 bytes (F32) or 8 (F64) per element of the extent.

// extent returns the range [lo, hi) of o's block elements that its view
// reaches (lo == hi when it has no elements).
func extent(o device.Operand) (lo, hi int) {
	if o.Strides == nil {
		return o.Off, o.Off + o.Len()
	}
	lo, hi = o.Off, o.Off
	for i, n := range o.Shape {
		if n == 0 {
			return o.Off, o.Off
		}
		step := (n - 1) * o.Strides[i]
		if step < 0 {
			lo += step
		} else {
			hi += step
		}
	}
	return lo, hi + 1
}

// rebase returns o with its offset moved down by lo.
func rebase(o device.Operand, lo int) device.Operand {
	o.Off -= lo
	return o
}

// f32 returns float32 elements for o and o rebased to index them: an F32
// block in place (o unchanged), else a converted copy of o's extent.
func f32(o device.Operand) ([]float32, device.Operand) {
	return widened(o, dtype.F32, dtype.AsF32, toF32)
}

// f64 is f32 for float64.
func f64(o device.Operand) ([]float64, device.Operand) {
	return widened(o, dtype.F64, dtype.AsF64, dtype.ToF64)
}

// put32 stores v, the float32 elements f32 (or s32) returned for o, back
// into a non-F32 block.
func put32(o device.Operand, v []float32) { putBack(o, dtype.F32, v, fromF32) }

// put64 is put32 for float64.
func put64(o device.Operand, v []float64) { putBack(o, dtype.F64, v, dtype.FromF64) }

// putAt32 converts v into o's block from element lo on.
func putAt32(o device.Operand, lo int, v []float32) { putAt(o, lo, v, fromF32) }

// putAt64 is putAt32 for float64.
func putAt64(o device.Operand, lo int, v []float64) { putAt(o, lo, v, dtype.FromF64) }

// s32 returns the elements of a contiguous operand as float32: its span of
// an F32 block, else a converted copy (put32 stores it back).
func s32(o device.Operand) []float32 {
	v, r := f32(o)
	return span(v, r)
}

// s64 is s32 for float64.
func s64(o device.Operand) []float64 {
	v, r := f64(o)
	return span(v, r)
}

// widened is f32 and f64: o's block viewed in place when its dtype is the
// compute dtype, else its extent converted by conv.
func widened[T any](o device.Operand, compute dtype.DType, view func([]byte) []T, conv func([]T, dtype.DType, []byte)) ([]T, device.Operand) {
	if o.DType == compute {
		return view(o.Block.Bytes()), o
	}
	lo, hi := extent(o)
	sz := o.DType.Size()
	out := make([]T, hi-lo)
	conv(out, o.DType, o.Block.Bytes()[lo*sz:hi*sz])
	return out, rebase(o, lo)
}

// putBack is put32 and put64: nothing to do when o has the compute dtype.
func putBack[T any](o device.Operand, compute dtype.DType, v []T, conv func(dtype.DType, []byte, []T)) {
	if o.DType != compute {
		lo, _ := extent(o)
		putAt(o, lo, v, conv)
	}
}

// putAt converts v into o's block from element lo on.
func putAt[T any](o device.Operand, lo int, v []T, conv func(dtype.DType, []byte, []T)) {
	sz := o.DType.Size()
	conv(o.DType, o.Block.Bytes()[lo*sz:(lo+len(v))*sz], v)
}
