package cpu

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// The indexing kernels read contiguous operands. IndexSelect and Gather copy
// elements bit for bit, so they work for every dtype without conversion;
// IndexAdd and ScatterAdd compute in F64 for F64 and in F32 otherwise.

// rawCopy runs an exact-copy kernel on dst and src viewed as elements of
// their byte size.
func rawCopy(op string, dst, src device.Operand, f8 func(d, s []int64), f4 func(d, s []int32), f2 func(d, s []uint16), f1 func(d, s []int8)) {
	if dst.DType != src.DType {
		panic(fmt.Sprintf("cpu: %s from %s into %s", op, src.DType, dst.DType))
	}
	db, sb := dst.Block.Bytes(), src.Block.Bytes()
	switch dst.DType.Size() {
	case 8:
		f8(span(dtype.AsI64(db), dst), span(dtype.AsI64(sb), src))
	case 4:
		f4(span(dtype.AsI32(db), dst), span(dtype.AsI32(sb), src))
	case 2:
		f2(span(dtype.AsU16(db), dst), span(dtype.AsU16(sb), src))
	case 1:
		f1(span(dtype.AsI8(db), dst), span(dtype.AsI8(sb), src))
	default:
		panic(fmt.Sprintf("cpu: %s of dtype %s", op, dst.DType))
	}
}

func (kern) IndexSelect(dst, src, idx device.Operand, outer, n, inner int) {
	ix := span(ints(idx), idx)
	rawCopy("IndexSelect", dst, src,
		func(d, s []int64) { kernels.IndexSelect(d, s, ix, outer, n, inner) },
		func(d, s []int32) { kernels.IndexSelect(d, s, ix, outer, n, inner) },
		func(d, s []uint16) { kernels.IndexSelect(d, s, ix, outer, n, inner) },
		func(d, s []int8) { kernels.IndexSelect(d, s, ix, outer, n, inner) })
}

func (kern) IndexAdd(dst, idx, src device.Operand, outer, n, inner int) {
	ix := span(ints(idx), idx)
	if wide(dst) {
		d := s64(dst)
		kernels.IndexAdd(d, ix, s64(src), outer, n, inner)
		put64(dst, d)
		return
	}
	d := s32(dst)
	kernels.IndexAdd(d, ix, s32(src), outer, n, inner)
	put32(dst, d)
}

func (kern) Gather(dst, src, idx device.Operand, outer, n, m, inner int) {
	ix := span(ints(idx), idx)
	rawCopy("Gather", dst, src,
		func(d, s []int64) { kernels.Gather(d, s, ix, outer, n, m, inner) },
		func(d, s []int32) { kernels.Gather(d, s, ix, outer, n, m, inner) },
		func(d, s []uint16) { kernels.Gather(d, s, ix, outer, n, m, inner) },
		func(d, s []int8) { kernels.Gather(d, s, ix, outer, n, m, inner) })
}

func (kern) ScatterAdd(dst, idx, src device.Operand, outer, n, m, inner int) {
	ix := span(ints(idx), idx)
	if wide(dst) {
		d := s64(dst)
		kernels.ScatterAdd(d, ix, s64(src), outer, n, m, inner)
		put64(dst, d)
		return
	}
	d := s32(dst)
	kernels.ScatterAdd(d, ix, s32(src), outer, n, m, inner)
	put32(dst, d)
}
