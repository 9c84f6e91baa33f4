package cpu

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// The convolution and pooling kernels read and write contiguous operands
// (the ops above make them so); they compute in F64 when the output is F64,
// else in F32. The workspace should have the compute dtype (another dtype
// works, through a converted copy); a nil Block passes a nil slice.

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

func (kern) Conv2d(p device.Conv2d, y, x, w, ws device.Operand) {
	contiguous("Conv2d", y, x, w, ws)
	a := convArgs(p)
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
	a := convArgs(p)
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
	a := convArgs(p)
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
