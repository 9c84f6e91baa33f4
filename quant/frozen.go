package quant

import (
	"fmt"
	"slices"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// FrozenTile is the most weight elements FrozenLinear dequantises at once:
// 65536 (256 KiB of F32 workspace).
const FrozenTile = 1 << 16

// FrozenLinear is a Linear whose weight is stored in INT8 (this package's
// format: one F32 scale per output feature) and never trained, but through
// which gradients flow to the input: the frozen base of QLoRA-style
// fine-tuning (package lora). Unlike Linear it does not quantize x: y =
// x·Ŵᵀ + b in F32 with Ŵ = q·s, dequantised one tile of rows at a time
// (at most FrozenTile elements) inside the matrix product, so no F32 copy
// of the whole weight ever exists.
//
// Memory: parameters Out·In bytes (weight) + 4·Out (scales) + 4·Out
// (bias, when present). Forward on x (…, In) with M rows allocates y (…,
// Out) F32 and borrows 4·rows·In bytes of workspace, rows =
// min(Out, max(1, FrozenTile/In)), freed before it returns (plus an F32
// contiguous copy of x when x is not contiguous F32, which the graph then
// keeps); it saves nothing (dx needs only the weight). Backward allocates dx (…, In) F32 and
// borrows the same tile.
type FrozenLinear struct {
	// Linear holds the weight (Out, In) I8, its scales (Out) F32 and the
	// bias (Out) F32 (nil without), as this package's Linear does; its
	// InputScale is nil (x is not quantized). Params and Train are its.
	*Linear
}

// Freeze returns the INT8 frozen form of the float Linear l: its weight
// quantized per output feature, its bias copied to F32, named as l's. l is
// left as it was (release it to keep only the INT8 copy).
func Freeze(l *nn.Linear) (*FrozenLinear, error) {
	var f *FrozenLinear
	err := autograd.Try(func() {
		q := newLinear(l.Weight.Device(), l.Name, l.In, l.Out, l.Bias != nil, false)
		defer releaseOnPanic(q)
		quantizeWeight(l.Weight, l.Out, q.Weight, q.WeightScale)
		if l.Bias != nil {
			s := autograd.NewScope()
			defer s.Release()
			s.NoGrad(func() { q.Bias.CopyFrom(s.Use(l.Bias).Cast(dtype.F32)) })
		}
		f = &FrozenLinear{q}
	})
	if err != nil {
		return nil, fmt.Errorf("quant.Freeze %s: %w", l.Name, err)
	}
	return f, nil
}

// Forward returns x·Ŵᵀ + b for x (…, In) of a float dtype, in F32, with
// a gradient for x when it requires one.
func (l *FrozenLinear) Forward(x *autograd.Tensor) *autograd.Tensor {
	const op = "quant.frozen_linear"
	defer x.Scope().Within(l.Name)()
	switch {
	case x.Rank() < 1 || x.Dim(-1) != l.In:
		fail(op, "%s: input %v: want (…, %d)", l.Name, x.Shape(), l.In)
	case !x.DType().IsFloat():
		fail(op, "%s: input %v %s: want a float tensor", l.Name, x.Shape(), x.DType())
	case x.Device() != l.Weight.Device():
		fail(op, "%s: input on %s, weights on %s", l.Name, x.Device().Name(), l.Weight.Device().Name())
	}
	xc := x
	if x.DType() != dtype.F32 || !x.IsContiguous() {
		xc = x.Cast(dtype.F32).Contiguous()
		defer xc.Release()
	}
	m := xc.Len() / l.In
	y := output(x.Scope(), x.Device(), dtype.F32, op, append(slices.Clone(x.Shape()[:x.Rank()-1]), l.Out)...)
	l.tiles(x.Scope(), op, func(k device.Kernels, o0, n int, wt device.Operand) {
		k.Gemm(device.Gemm{M: m, N: n, K: l.In, Alpha: 1, TransB: true, A: operand(xc), B: wt,
			C: shifted(operand(y), o0), Bias: l.biasSlice(o0, n), LdA: l.In, LdB: l.In, LdC: l.Out})
	})
	if !xc.RequiresGrad() {
		return y
	}
	autograd.Record(autograd.Custom{
		Name: op, Outs: []*autograd.Tensor{y}, Ins: []*autograd.Tensor{xc},
		Backward: func(grads, _ []*autograd.Tensor, need []bool) []*autograd.Tensor {
			if grads[0] == nil || !need[0] {
				return []*autograd.Tensor{nil}
			}
			return []*autograd.Tensor{l.backward(op, grads[0], m, xc.Shape())}
		},
	})
	return y
}

// backward returns dx (…, In) = dy·Ŵ of x's shape, tile by tile.
func (l *FrozenLinear) backward(op string, dy *autograd.Tensor, m int, shape []int) *autograd.Tensor {
	g := dy
	if !g.IsContiguous() || g.DType() != dtype.F32 {
		g = g.Cast(dtype.F32).Contiguous()
		defer g.Release()
	}
	dx := output(g.Scope(), g.Device(), dtype.F32, op+"_backward", shape...)
	if dx.Scope() == nil {
		dx.Block().Retag(device.Workspace)
	}
	l.tiles(g.Scope(), op+"_backward", func(k device.Kernels, o0, n int, wt device.Operand) {
		beta := 1.0
		if o0 == 0 {
			beta = 0
		}
		k.Gemm(device.Gemm{M: m, N: l.In, K: n, Alpha: 1, Beta: beta, A: shifted(operand(g), o0), B: wt, C: operand(dx),
			LdA: l.Out, LdB: l.In, LdC: l.In})
	})
	return dx
}

// tileRows returns the rows of the weight dequantised at once.
func (l *FrozenLinear) tileRows() int {
	return min(l.Out, max(1, FrozenTile/max(l.In, 1)))
}

// tiles dequantises the weight tile by tile into one borrowed workspace
// (rows·In F32) and calls f with each tile's first row o0, its rows n and
// the contiguous (n, In) operand. On a device without kernels (meta) it
// only borrows the workspace.
func (l *FrozenLinear) tiles(s *autograd.Scope, op string, f func(k device.Kernels, o0, n int, wt device.Operand)) {
	w := newWork(l.Weight.Device(), s, op)
	defer w.free()
	rows := l.tileRows()
	blk := w.alloc(dtype.F32, rows*l.In)
	k := l.Weight.Device().Kernels()
	if k == nil {
		return
	}
	for o0 := 0; o0 < l.Out; o0 += rows {
		n := min(rows, l.Out-o0)
		wt := device.Operand{Block: blk, DType: dtype.F32, Shape: []int{n, l.In}, Strides: []int{l.In, 1}}
		q := operand(l.Weight)
		q.Off, q.Shape, q.Strides = o0*l.In, []int{n, l.In}, []int{l.In, 1}
		sc := operand(l.WeightScale)
		sc.Off, sc.Shape, sc.Strides = o0, []int{n, l.In}, []int{1, 0}
		k.Copy(wt, q)
		k.Binary(device.Mul, wt, wt, sc)
		f(k, o0, n, wt)
	}
}

// biasSlice returns the bias of rows [o0, o0+n) (none without bias).
func (l *FrozenLinear) biasSlice(o0, n int) device.Operand {
	if l.Bias == nil {
		return device.Operand{}
	}
	b := operand(l.Bias)
	b.Off, b.Shape, b.Strides = b.Off+o0, []int{n}, []int{1}
	return b
}

// shifted returns the contiguous matrix operand t moved by off elements,
// for a GEMM over its columns [off, …) with the leading dimension of t.
func shifted(t device.Operand, off int) device.Operand {
	t.Off += off
	return t
}
