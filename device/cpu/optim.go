package cpu

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// The optimizer kernels work in place on F32 or F64 operands; they are
// never given 16-bit parameters (mixed precision keeps F32 master weights),
// but the gradient of an F32 master weight may be F16 or BF16: it is
// widened tile by tile (tileElems elements) into each worker's tile
// scratch (tile.go), never as a whole.

// optimDType panics unless every present operand is contiguous, has p's
// dtype (F32 or F64) and p's length.
func optimDType(op string, p device.Operand, os ...device.Operand) dtype.DType {
	if p.DType != dtype.F32 && p.DType != dtype.F64 {
		panic(fmt.Sprintf("cpu: %s: parameter dtype %s, want F32 or F64", op, p.DType))
	}
	for i, o := range append([]device.Operand{p}, os...) {
		if o.Nil() {
			continue
		}
		// The gradient (os[0]) of an F32 master weight may be F16 or BF16.
		half := i == 1 && p.DType == dtype.F32 && o.DType.IsLowPrecision()
		if (o.DType != p.DType && !half) || o.Len() != p.Len() || !o.Contiguous() {
			panic(fmt.Sprintf("cpu: %s: operand %s %v (contiguous %v) does not match parameter %s %v",
				op, o.DType, o.Shape, o.Contiguous(), p.DType, p.Shape))
		}
	}
	return p.DType
}

func span32(o device.Operand) []float32 {
	if o.Nil() {
		return nil
	}
	return span(dtype.AsF32(o.Block.Bytes()), o)
}

func span64(o device.Operand) []float64 {
	if o.Nil() {
		return nil
	}
	return span(dtype.AsF64(o.Block.Bytes()), o)
}

func (kern) AdamStep(p, g, m, v device.Operand, a device.AdamArgs) {
	ka := kernels.AdamUpdateArgs{LR: a.LR, Beta1: a.Beta1, Beta2: a.Beta2, Eps: a.Eps,
		WeightDecay: a.WeightDecay, Step: a.Step, Decoupled: a.Decoupled}
	if optimDType("adam_step", p, g, m, v) == dtype.F64 {
		kernels.AdamUpdate(span64(p), span64(g), span64(m), span64(v), ka)
		return
	}
	p32, m32, v32 := span32(p), span32(m), span32(v)
	if g.DType == dtype.F32 {
		kernels.AdamUpdate(p32, span32(g), m32, v32, ka)
		return
	}
	halfGradTiles(g, func(lo, hi int, gt []float32) {
		kernels.AdamUpdate(p32[lo:hi], gt, m32[lo:hi], v32[lo:hi], ka)
	})
}

func (kern) SGDStep(p, g, buf device.Operand, a device.SGDArgs) {
	if a.Momentum != 0 && buf.Nil() {
		panic("cpu: sgd_step: momentum without a buffer")
	}
	ka := kernels.SGDUpdateArgs{LR: a.LR, Momentum: a.Momentum, Dampening: a.Dampening,
		WeightDecay: a.WeightDecay, Nesterov: a.Nesterov, First: a.First}
	if optimDType("sgd_step", p, g, buf) == dtype.F64 {
		kernels.SGDUpdate(span64(p), span64(g), span64(buf), ka)
		return
	}
	p32, b32 := span32(p), span32(buf)
	if g.DType == dtype.F32 {
		kernels.SGDUpdate(p32, span32(g), b32, ka)
		return
	}
	halfGradTiles(g, func(lo, hi int, gt []float32) {
		var bt []float32
		if b32 != nil {
			bt = b32[lo:hi]
		}
		kernels.SGDUpdate(p32[lo:hi], gt, bt, ka)
	})
}

func (kern) SumSquares(dst, src device.Operand) {
	if dst.DType != dtype.F64 || dst.Len() != 1 {
		panic(fmt.Sprintf("cpu: sum_squares: destination %s %v, want one F64 element", dst.DType, dst.Shape))
	}
	if !src.Contiguous() {
		panic(fmt.Sprintf("cpu: sum_squares: source %v with strides %v is not contiguous", src.Shape, src.Strides))
	}
	var s float64
	switch src.DType {
	case dtype.F64:
		s = kernels.SumSquares(span64(src))
	case dtype.F32:
		s = kernels.SumSquares(span32(src))
	default:
		s = kernels.SumSquares(s32(src))
	}
	span64(dst)[0] = s
}

// halfGradTiles calls update for each tile [lo, hi) of tileElems elements
// of the contiguous 16-bit gradient g, on all workers, with the tile
// widened to float32 in the worker's tile scratch. The optimizer updates
// are elementwise, so tiling changes no result.
func halfGradTiles(g device.Operand, update func(lo, hi int, g []float32)) {
	n := g.Len()
	src := g.Block.Bytes()[g.Off*2 : (g.Off+n)*2]
	kernels.ParallelFor((n+tileElems-1)/tileElems, 1, func(t0, t1 int) {
		s := tileScratches.Get()
		defer tileScratches.Put(s)
		for t := t0; t < t1; t++ {
			lo, hi := t*tileElems, min((t+1)*tileElems, n)
			gt := s[0][:hi-lo]
			toF32(gt, g.DType, src[lo*2:hi*2])
			update(lo, hi, gt)
		}
	})
}
