package cpu

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// The convolution and pooling kernels read and write contiguous operands
// (the ops above make them so); they compute in F64 when the output is F64,
// else in F32. The workspace should have the compute dtype (another dtype
// works, through a converted copy); a nil Block passes a nil slice.
//
// A convolution whose two inputs are both 16-bit floats (F16 or BF16) and
// whose output is F32, F16 or BF16 reads them as 16-bit instead
// (kernels.Conv2dHalf and its gradients): im2col over the 16-bit values
// and GemmHalf (VDPBF16PS for BF16 on AVX512_BF16), F32 accumulation, one
// rounding of a 16-bit output. Its workspace's bytes are used as scratch
// whatever its dtype.
//
// All the kernels' scratch is in the workspace (kernels.ConvWorkspace:
// packed filters, copies of dw, one tile for each of at most
// kernels.ConvSlots() workers), sized by device.Conv2d's ForwardWorkspace,
// GradInputWorkspace and GradWeightWorkspace; a missing or shorter
// workspace panics instead of taking Go heap.

func convArgs(p device.Conv2d) kernels.ConvArgs {
	return kernels.ConvArgs{
		N: p.N, C: p.C, H: p.H, W: p.W, K: p.K, R: p.R, S: p.S,
		StrideH: p.StrideH, StrideW: p.StrideW, PadH: p.PadH, PadW: p.PadW,
		DilH: p.DilH, DilW: p.DilW, Groups: p.Groups, OH: p.OH, OW: p.OW,
	}
}

func poolArgs(p device.Pool2d) kernels.PoolArgs {
	return kernels.PoolArgs{
		N: p.N, C: p.C, H: p.H, W: p.W, KH: p.KH, KW: p.KW, SH: p.SH, SW: p.SW,
		PH: p.PH, PW: p.PW, DH: p.DH, DW: p.DW, OH: p.OH, OW: p.OW, CountPad: p.CountPad,
	}
}

// contiguous panics unless every operand is dense: a strided operand here
// is a bug in the op that made the call.
func contiguous(op string, os ...device.Operand) {
	for i, o := range os {
		if !o.Nil() && !o.Contiguous() {
			panic(fmt.Sprintf("cpu: %s: operand %d of shape %v has strides %v, want contiguous", op, i, o.Shape, o.Strides))
		}
	}
}

// halfConv reports whether a convolution with inputs a and b and output
// out takes the 16-bit kernels.
func halfConv(out, a, b device.Operand) bool {
	o := out.DType
	return a.DType.IsLowPrecision() && b.DType.IsLowPrecision() && (o == dtype.F32 || o.IsLowPrecision())
}

// half16 is a contiguous 16-bit operand's span of bits.
func half16(o device.Operand) kernels.Half16 {
	return kernels.Half16{Bits: span(dtype.AsU16(o.Block.Bytes()), o), BF16: o.DType == dtype.BF16}
}

// convOut is a 16-bit convolution's output: an F32 span, or 16-bit bits.
func convOut(o device.Operand) kernels.ConvOut {
	if o.DType == dtype.F32 {
		return kernels.ConvOut{F: span32(o)}
	}
	return kernels.ConvOut{H: half16(o)}
}

// scratchWords views the bytes of a workspace's span, whatever its dtype,
// as whole float32 words (nil for a nil Block).
func scratchWords(o device.Operand) []float32 {
	if o.Nil() {
		return nil
	}
	sz := o.DType.Size()
	lo, hi := (o.Off*sz+3)&^3, (o.Off+o.Len())*sz&^3
	if hi <= lo {
		return nil
	}
	return dtype.AsF32(o.Block.Bytes()[lo:hi])
}

// haveWorkspace panics when a convolution that needs a workspace got a
// nil Block (the kernels would take Go heap instead); the kernels check
// its length.
func haveWorkspace(op string, ws device.Operand, need int) {
	if ws.Nil() && need > 0 {
		panic(fmt.Sprintf("cpu: %s: no workspace, want %d elements of the compute dtype", op, need))
	}
}

func (kern) Conv2d(p device.Conv2d, y, x, w, ws device.Operand) {
	contiguous("Conv2d", y, x, w, ws)
	haveWorkspace("Conv2d", ws, p.ForwardWorkspace(x.DType))
	a := convArgs(p)
	if halfConv(y, x, w) {
		kernels.Conv2dHalf(a, convOut(y), half16(x), half16(w), scratchWords(ws))
		return
	}
	if wide(y) {
		d := s64(y)
		kernels.Conv2d(a, d, s64(x), s64(w), opt64(ws))
		put64(y, d)
		return
	}
	d := s32(y)
	kernels.Conv2d(a, d, s32(x), s32(w), opt32(ws))
	put32(y, d)
}

func (kern) Conv2dGradInput(p device.Conv2d, dx, dy, w, ws device.Operand) {
	contiguous("Conv2dGradInput", dx, dy, w, ws)
	haveWorkspace("Conv2dGradInput", ws, p.GradInputWorkspace(dy.DType))
	a := convArgs(p)
	if halfConv(dx, dy, w) {
		kernels.Conv2dGradInputHalf(a, convOut(dx), half16(dy), half16(w), scratchWords(ws))
		return
	}
	if wide(dx) {
		d := s64(dx)
		kernels.Conv2dGradInput(a, d, s64(dy), s64(w), opt64(ws))
		put64(dx, d)
		return
	}
	d := s32(dx)
	kernels.Conv2dGradInput(a, d, s32(dy), s32(w), opt32(ws))
	put32(dx, d)
}

func (kern) Conv2dGradWeight(p device.Conv2d, dw, dy, x, ws device.Operand) {
	contiguous("Conv2dGradWeight", dw, dy, x, ws)
	haveWorkspace("Conv2dGradWeight", ws, p.GradWeightWorkspace(dw.DType))
	a := convArgs(p)
	if halfConv(dw, dy, x) {
		kernels.Conv2dGradWeightHalf(a, convOut(dw), half16(dy), half16(x), scratchWords(ws))
		return
	}
	if wide(dw) {
		d := s64(dw)
		kernels.Conv2dGradWeight(a, d, s64(dy), s64(x), opt64(ws))
		put64(dw, d)
		return
	}
	d := s32(dw)
	kernels.Conv2dGradWeight(a, d, s32(dy), s32(x), opt32(ws))
	put32(dw, d)
}

func (kern) MaxPool2d(p device.Pool2d, y, x device.Operand) {
	contiguous("MaxPool2d", y, x)
	a := poolArgs(p)
	if wide(y) {
		d := s64(y)
		kernels.MaxPool2d(a, d, s64(x))
		put64(y, d)
		return
	}
	d := s32(y)
	kernels.MaxPool2d(a, d, s32(x))
	put32(y, d)
}

func (kern) MaxPool2dGrad(p device.Pool2d, dx, dy, x device.Operand) {
	contiguous("MaxPool2dGrad", dx, dy, x)
	a := poolArgs(p)
	if wide(dx) {
		d := s64(dx)
		kernels.MaxPool2dGrad(a, d, s64(dy), s64(x))
		put64(dx, d)
		return
	}
	d := s32(dx)
	kernels.MaxPool2dGrad(a, d, s32(dy), s32(x))
	put32(dx, d)
}

func (kern) AvgPool2d(p device.Pool2d, y, x device.Operand) {
	contiguous("AvgPool2d", y, x)
	a := poolArgs(p)
	if wide(y) {
		d := s64(y)
		kernels.AvgPool2d(a, d, s64(x))
		put64(y, d)
		return
	}
	d := s32(y)
	kernels.AvgPool2d(a, d, s32(x))
	put32(y, d)
}

func (kern) AvgPool2dGrad(p device.Pool2d, dx, dy device.Operand) {
	contiguous("AvgPool2dGrad", dx, dy)
	a := poolArgs(p)
	if wide(dx) {
		d := s64(dx)
		kernels.AvgPool2dGrad(a, d, s64(dy))
		put64(dx, d)
		return
	}
	d := s32(dx)
	kernels.AvgPool2dGrad(a, d, s32(dy))
	put32(dx, d)
}

func (kern) AdaptiveAvgPool2d(y, x device.Operand, n, c, h, w, oh, ow int) {
	contiguous("AdaptiveAvgPool2d", y, x)
	if wide(y) {
		d := s64(y)
		kernels.AdaptiveAvgPool2d(d, s64(x), n, c, h, w, oh, ow)
		put64(y, d)
		return
	}
	d := s32(y)
	kernels.AdaptiveAvgPool2d(d, s32(x), n, c, h, w, oh, ow)
	put32(y, d)
}

func (kern) AdaptiveAvgPool2dGrad(dx, dy device.Operand, n, c, h, w, oh, ow int) {
	contiguous("AdaptiveAvgPool2dGrad", dx, dy)
	if wide(dx) {
		d := s64(dx)
		kernels.AdaptiveAvgPool2dGrad(d, s64(dy), n, c, h, w, oh, ow)
		put64(dx, d)
		return
	}
	d := s32(dx)
	kernels.AdaptiveAvgPool2dGrad(d, s32(dy), n, c, h, w, oh, ow)
	put32(dx, d)
}
