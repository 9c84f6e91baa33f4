package cpu

import (
	"fmt"
	"unsafe"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// kern implements device.Kernels over host memory with package kernels.
//
// F32 and F64 operands are used in place. F16 and BF16 operands are computed
// in F32 (see widen.go): GEMM reads them as 16-bit bits; other kernels get
// a converted copy of only the elements the operand's view can reach, never
// its whole block, and outputs are written back over that same range.
type kern struct{}

var _ device.Kernels = kern{}

func lay(o device.Operand) kernels.Layout {
	return kernels.Layout{Off: o.Off, Shape: o.Shape, Strides: o.Strides}
}

// toF32 is dtype.ToF32 with F16 and BF16 converted by the bulk kernels of
// package kernels, which give the same bits.
func toF32(dst []float32, d dtype.DType, src []byte) {
	if h, ok := halves(src); ok && len(h) == len(dst) {
		switch d {
		case dtype.F16:
			kernels.F16ToF32(dst, h)
			return
		case dtype.BF16:
			kernels.BF16ToF32(dst, h)
			return
		}
	}
	dtype.ToF32(dst, d, src)
}

// fromF32 is dtype.FromF32 with F16 and BF16 converted by the bulk
// kernels of package kernels, which give the same bits.
func fromF32(d dtype.DType, dst []byte, src []float32) {
	if h, ok := halves(dst); ok && len(h) == len(src) {
		switch d {
		case dtype.F16:
			kernels.F32ToF16(h, src)
			return
		case dtype.BF16:
			kernels.F32ToBF16(h, src)
			return
		}
	}
	dtype.FromF32(d, dst, src)
}

// halves views b as uint16 elements when its length and address allow;
// blocks from the allocator always do, and anything else takes dtype's
// byte-wise path.
func halves(b []byte) ([]uint16, bool) {
	if len(b)%2 != 0 || len(b) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%2 != 0 {
		return nil, false
	}
	return dtype.AsU16(b), true
}

// ints returns an integer operand's block as int64 values.
func ints(o device.Operand) []int64 {
	b := o.Block.Bytes()
	switch o.DType {
	case dtype.I64:
		return dtype.AsI64(b)
	case dtype.I32:
		v := dtype.AsI32(b)
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(x)
		}
		return out
	case dtype.I8:
		v := dtype.AsI8(b)
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(x)
		}
		return out
	}
	panic(fmt.Sprintf("cpu: index operand has dtype %s, want an integer dtype", o.DType))
}

// wide reports whether a call whose output is o computes in F64.
func wide(o device.Operand) bool { return o.DType == dtype.F64 }

func (kern) Write(dst device.Operand, src []byte) {
	sz := dst.DType.Size()
	copy(dst.Block.Bytes()[dst.Off*sz:dst.Off*sz+len(src)], src)
}

func (kern) Read(dst []byte, src device.Operand) {
	sz := src.DType.Size()
	copy(dst, src.Block.Bytes()[src.Off*sz:src.Off*sz+len(dst)])
}

func (kern) Copy(dst, src device.Operand) {
	if dst.DType == src.DType {
		copyRaw(dst, src)
		return
	}
	db, sb := dst.Block.Bytes(), src.Block.Bytes()
	if dst.Contiguous() && src.Contiguous() {
		n := dst.Len()
		dd, ss := dst.Off*dst.DType.Size(), src.Off*src.DType.Size()
		d, s := db[dd:dd+n*dst.DType.Size()], sb[ss:ss+n*src.DType.Size()]
		switch {
		case src.DType == dtype.F32:
			fromF32(dst.DType, d, dtype.AsF32(s))
			return
		case dst.DType == dtype.F32:
			toF32(dtype.AsF32(d), src.DType, s)
			return
		}
	}
	in, sl := f64(src)
	out, dl := f64(dst)
	kernels.Copy(out, lay(dl), in, lay(sl))
	put64(dst, out)
}

// copyRaw copies between operands of one dtype without conversion.
func copyRaw(dst, src device.Operand) {
	db, sb := dst.Block.Bytes(), src.Block.Bytes()
	switch dst.DType.Size() {
	case 8:
		kernels.Copy(dtype.AsI64(db), lay(dst), dtype.AsI64(sb), lay(src))
	case 4:
		kernels.Copy(dtype.AsI32(db), lay(dst), dtype.AsI32(sb), lay(src))
	case 2:
		kernels.Copy(dtype.AsU16(db), lay(dst), dtype.AsU16(sb), lay(src))
	case 1:
		kernels.Copy(dtype.AsI8(db), lay(dst), dtype.AsI8(sb), lay(src))
	default:
		panic(fmt.Sprintf("cpu: Copy of dtype %s", dst.DType))
	}
}

func (kern) Fill(dst device.Operand, v float64) {
	b := dst.Block.Bytes()
	l := lay(dst)
	switch dst.DType {
	case dtype.F64:
		kernels.Fill(dtype.AsF64(b), l, v)
	case dtype.F32:
		kernels.Fill(dtype.AsF32(b), l, float32(v))
	case dtype.F16, dtype.BF16:
		var one [2]byte
		dtype.FromF64(dst.DType, one[:], []float64{v})
		kernels.Fill(dtype.AsU16(b), l, dtype.AsU16(one[:])[0])
	case dtype.I64:
		var one [8]byte
		dtype.FromF64(dst.DType, one[:], []float64{v})
		kernels.Fill(dtype.AsI64(b), l, dtype.AsI64(one[:])[0])
	case dtype.I32:
		var one [4]byte
		dtype.FromF64(dst.DType, one[:], []float64{v})
		kernels.Fill(dtype.AsI32(b), l, dtype.AsI32(one[:])[0])
	case dtype.I8:
		var one [1]byte
		dtype.FromF64(dst.DType, one[:], []float64{v})
		kernels.Fill(dtype.AsI8(b), l, dtype.AsI8(one[:])[0])
	default:
		panic(fmt.Sprintf("cpu: Fill of dtype %s", dst.DType))
	}
}
