package cpu

import (
	"fmt"
	"unsafe"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// The quantization kernels read and write contiguous operands of exactly
// the dtypes device.Kernels documents (F32 scales and activations, I8
// quantized values, I32 accumulators); anything else is a bug in the op
// that made the call and panics.

// want panics unless o is contiguous with dtype dt (a nil operand passes
// when nilOK).
func want(op string, o device.Operand, dt dtype.DType, nilOK bool) {
	if o.Nil() {
		if !nilOK {
			panic(fmt.Sprintf("cpu: %s: missing operand", op))
		}
		return
	}
	if o.DType != dt || !o.Contiguous() {
		panic(fmt.Sprintf("cpu: %s: operand %s %v (contiguous %v), want contiguous %s", op, o.DType, o.Shape, o.Contiguous(), dt))
	}
}

func spanI8(o device.Operand) []int8 { return span(dtype.AsI8(o.Block.Bytes()), o) }

func spanI32(o device.Operand) []int32 { return span(dtype.AsI32(o.Block.Bytes()), o) }

// spanAcc views a contiguous F32 operand's memory as int32 elements: the
// int8 GEMM accumulates there before the epilogue converts in place.
func spanAcc(o device.Operand) []int32 {
	f := span32(o)
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&f[0])), len(f))
}

func (kern) QuantScales(dst, src device.Operand, rows int) {
	want("quant_scales", dst, dtype.F32, false)
	want("quant_scales", src, dtype.F32, false)
	if dst.Len() != rows {
		panic(fmt.Sprintf("cpu: quant_scales: %d scales for %d rows", dst.Len(), rows))
	}
	kernels.QuantScales(span32(dst), span32(src), rows)
}

func (kern) Quantize(dst, src, scale device.Operand, rows int) {
	want("quantize", dst, dtype.I8, false)
	want("quantize", src, dtype.F32, false)
	want("quantize", scale, dtype.F32, false)
	if dst.Len() != src.Len() {
		panic(fmt.Sprintf("cpu: quantize: %v into %v", src.Shape, dst.Shape))
	}
	kernels.Quantize(spanI8(dst), span32(src), span32(scale), rows)
}

func (kern) FakeQuantize(dst, src, scale device.Operand, rows int) {
	want("fake_quantize", scale, dtype.F32, false)
	want("fake_quantize", dst, src.DType, false)
	if dst.Len() != src.Len() {
		panic(fmt.Sprintf("cpu: fake_quantize: %v into %v", src.Shape, dst.Shape))
	}
	switch src.DType {
	case dtype.F32:
		want("fake_quantize", src, dtype.F32, false)
		kernels.FakeQuantize(span32(dst), span32(src), span32(scale), rows)
	case dtype.F64:
		want("fake_quantize", src, dtype.F64, false)
		kernels.FakeQuantize(span64(dst), span64(src), span32(scale), rows)
	default:
		panic(fmt.Sprintf("cpu: fake_quantize: dtype %s, want F32 or F64", src.DType))
	}
}

func (kern) FakeQuantizeGrad(dx, dy, src, scale device.Operand, rows int) {
	want("fake_quantize_grad", scale, dtype.F32, false)
	for _, o := range []device.Operand{dx, dy} {
		want("fake_quantize_grad", o, src.DType, false)
		if o.Len() != src.Len() {
			panic(fmt.Sprintf("cpu: fake_quantize_grad: operand %v for input %v", o.Shape, src.Shape))
		}
	}
	switch src.DType {
	case dtype.F32:
		want("fake_quantize_grad", src, dtype.F32, false)
		kernels.FakeQuantizeGrad(span32(dx), span32(dy), span32(src), span32(scale), rows)
	case dtype.F64:
		want("fake_quantize_grad", src, dtype.F64, false)
		kernels.FakeQuantizeGrad(span64(dx), span64(dy), span64(src), span32(scale), rows)
	default:
		panic(fmt.Sprintf("cpu: fake_quantize_grad: dtype %s, want F32 or F64", src.DType))
	}
}

func (kern) LinearI8(y, xq, wq, xscale, wscale, bias device.Operand, m, n, k int) {
	const op = "linear_i8"
	want(op, y, dtype.F32, false)
	want(op, xq, dtype.I8, false)
	want(op, wq, dtype.I8, false)
	want(op, xscale, dtype.F32, false)
	want(op, wscale, dtype.F32, false)
	want(op, bias, dtype.F32, true)
	if y.Len() != m*n || xq.Len() != m*k || wq.Len() != n*k || xscale.Len() != 1 || wscale.Len() != n || (!bias.Nil() && bias.Len() != n) {
		panic(fmt.Sprintf("cpu: %s: m=%d n=%d k=%d with y %v, x %v, w %v, scales %v and %v, bias %v",
			op, m, n, k, y.Shape, xq.Shape, wq.Shape, xscale.Shape, wscale.Shape, bias.Shape))
	}
	if m == 0 || n == 0 {
		return
	}
	acc := spanAcc(y)
	kernels.GemmI8T(m, n, k, spanI8(xq), k, spanI8(wq), k, acc, n)
	var b []float32
	if !bias.Nil() {
		b = span32(bias)
	}
	// The epilogue reads each accumulator before it writes the float in
	// its place, element by element: converting in place is safe.
	kernels.DequantI32(m, n, span32(y), n, acc, n, span32(xscale), span32(wscale), b)
}

func (kern) Conv2dI8(p device.Conv2d, y, xq, wq, xscale, wscale, bias, col, acc device.Operand, relu bool) {
	const op = "conv2d_i8"
	want(op, y, dtype.F32, false)
	want(op, xq, dtype.I8, false)
	want(op, wq, dtype.I8, false)
	want(op, xscale, dtype.F32, false)
	want(op, wscale, dtype.F32, false)
	want(op, bias, dtype.F32, true)
	cw, aw := p.I8Workspace()
	want(op, col, dtype.I8, cw == 0)
	want(op, acc, dtype.I32, aw == 0)
	if xscale.Len() != 1 {
		panic(fmt.Sprintf("cpu: %s: %d input scales, want 1", op, xscale.Len()))
	}
	if p.N == 0 || p.K == 0 || p.OH*p.OW == 0 {
		return
	}
	var b []float32
	if !bias.Nil() {
		b = span32(bias)
	}
	kernels.Conv2dI8(convArgs(p), span32(y), spanI8(xq), spanI8(wq), span32(xscale)[0], span32(wscale), b, relu,
		p.I8Chunk(), spanI8(col), spanI32(acc))
}
