package parallel

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// block is the number of elements reduced at a time: the accumulator
// (and a converted input for 16-bit) stay in the core's cache while every
// rank's input streams through once.
const block = 16384

// scratch is one rank's reduction workspace: a few cache-sized Go slices,
// made once per communicator. They are temporaries of this CPU
// implementation, like the cpu device's 16-bit conversions, and hold no
// tensor: device memory is never allocated by a collective.
type scratch struct {
	acc, tmp []float32
	acc64    []float64
}

func newScratch() *scratch {
	return &scratch{acc: make([]float32, block), tmp: make([]float32, block), acc64: make([]float64, block)}
}

// reduce writes into out the sum (or average) of ins, element by element,
// added in rank order. out may be one of ins.
func (s *scratch) reduce(dt dtype.DType, op Op, out []byte, ins [][]byte) {
	es := dt.Size()
	n := len(out) / es
	avg := op == Avg && len(ins) > 1
	for lo := 0; lo < n; lo += block {
		hi := min(lo+block, n)
		o := out[lo*es : hi*es]
		part := func(r int) []byte { return ins[r][lo*es : hi*es] }
		switch dt {
		case dtype.F64:
			acc := s.acc64[:hi-lo]
			sumInto(acc, dtype.AsF64(o), len(ins), func(r int) []float64 { return dtype.AsF64(part(r)) }, avg)
		case dtype.F32:
			acc := s.acc[:hi-lo]
			sumInto(acc, dtype.AsF32(o), len(ins), func(r int) []float32 { return dtype.AsF32(part(r)) }, avg)
		default: // F16, BF16: converted to F32, added there, rounded once
			acc, tmp := s.acc[:hi-lo], s.tmp[:hi-lo]
			toF32(dt, acc, part(0))
			for r := 1; r < len(ins); r++ {
				toF32(dt, tmp, part(r))
				add(acc, acc, tmp)
			}
			if avg {
				divide(acc, acc, float32(len(ins)))
			}
			fromF32(dt, o, acc)
		}
	}
}

// sumInto writes into out the sum (or average) of the n inputs in(r), in
// rank order, through the cache-resident acc: acc = in(0)+in(1), then
// acc += in(r), and the last pass (the division, or a copy) writes out.
// out may be one of the inputs: it is written only at the end.
func sumInto[T kernels.Float](acc, out []T, n int, in func(int) []T, avg bool) {
	if n == 1 {
		copy(out, in(0))
		return
	}
	add(acc, in(0), in(1))
	for r := 2; r < n; r++ {
		add(acc, acc, in(r))
	}
	if avg {
		divide(out, acc, T(n))
	} else {
		copy(out, acc)
	}
}

// add writes dst = a + b with the vectorised kernel (dst may be a or b).
func add[T kernels.Float](dst, a, b []T) {
	l := kernels.Layout{Shape: []int{len(dst)}}
	kernels.Binary(kernels.BAdd, dst, l, a, l, b, l)
}

// divide writes dst = src / n: a multiplication by 1/n when n is a power
// of two (then exact, and vectorised), a division otherwise. dst may be
// src.
func divide[T kernels.Float](dst, src []T, n T) {
	if p := int(n); p&(p-1) == 0 {
		l := kernels.Layout{Shape: []int{len(dst)}}
		kernels.Unary(opScale, float64(1/n), dst, l, src, l)
		return
	}
	for i := range dst {
		dst[i] = src[i] / n
	}
}

func toF32(dt dtype.DType, dst []float32, src []byte) {
	if dt == dtype.BF16 {
		kernels.BF16ToF32(dst, dtype.AsU16(src))
	} else {
		kernels.F16ToF32(dst, dtype.AsU16(src))
	}
}

func fromF32(dt dtype.DType, dst []byte, src []float32) {
	if dt == dtype.BF16 {
		kernels.F32ToBF16(dtype.AsU16(dst), src)
	} else {
		kernels.F32ToF16(dtype.AsU16(dst), src)
	}
}

// opScale is the kernels' number of device.Scale (x·arg).
const opScale = int(device.Scale)
