package cuda

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// The quantization kernels (kernels/quant.cu) take contiguous operands of
// exactly the dtypes device.Kernels documents and give the cpu's results
// bit for bit: the int8 products accumulate exactly in int32 and the
// float steps round as the cpu's do (no fused multiply-add). LinearI8 and
// Conv2dI8 are one int8 GEMM kernel each step, gemm_i8, whose epilogue
// dequantizes straight into y: Conv2dI8 uses col as one transposed im2col
// matrix of as many samples as it holds and leaves acc unused.

// gemmTile is TM (= TN) of kernels/quant.cu.
const gemmTile = 64

// want raises a bad-operand error unless o is contiguous with dtype dt (a
// nil operand passes when nilOK).
func (k *kern) want(op, name string, o device.Operand, dt dtype.DType, nilOK bool) {
	if o.Nil() {
		if !nilOK {
			k.bad(op, "%s missing: want a %s operand", name, dt)
		}
		return
	}
	if o.DType != dt || !o.Contiguous() {
		k.bad(op, "%s of dtype %s shape %v strides %v: want contiguous %s", name, o.DType, o.Shape, o.Strides, dt)
	}
}

// scaleArgs checks that src of n elements splits into rows rows and that
// scale holds 1 or rows F32 values, and returns the kernels' trailing
// arguments (n, cols, per_row).
func (k *kern) scaleArgs(op string, n, rows int, scale device.Operand) []Arg {
	k.want(op, "scale", scale, dtype.F32, false)
	if rows <= 0 || n%rows != 0 || (scale.Len() != 1 && scale.Len() != rows) {
		k.bad(op, "%d values in %d rows with %d scales: want rows dividing the values and 1 or rows scales", n, rows, scale.Len())
	}
	return []Arg{I64(int64(n)), I64(int64(max(n/rows, 1))), Int(b2i(scale.Len() == rows && rows > 1))}
}

// QuantScales runs quant_scales_f32, one block per row.
func (k *kern) QuantScales(dst, src device.Operand, rows int) {
	const op = "quant_scales"
	k.want(op, "dst", dst, dtype.F32, false)
	k.want(op, "src", src, dtype.F32, false)
	if rows <= 0 || src.Len()%rows != 0 || dst.Len() != rows {
		k.bad(op, "%d values in %d rows with %d scales: want rows dividing the values and rows scales", src.Len(), rows, dst.Len())
	}
	cols := src.Len() / rows
	k.launch("quant_scales_f32", rowsLaunch(rows, cols), k.Ptr(dst), k.Ptr(src), I64(int64(rows)), I64(int64(cols)))
}

// Quantize runs quantize_f32, one thread per element.
func (k *kern) Quantize(dst, src, scale device.Operand, rows int) {
	const op = "quantize"
	k.want(op, "dst", dst, dtype.I8, false)
	k.want(op, "src", src, dtype.F32, false)
	k.sameLen(op, dst, src)
	args := k.scaleArgs(op, src.Len(), rows, scale)
	if n := src.Len(); n > 0 {
		k.launch("quantize_f32", Linear(n), append([]Arg{k.Ptr(dst), k.Ptr(src), k.Ptr(scale)}, args...)...)
	}
}

// quantFloat checks that os are contiguous, of one length and of the
// dtype of the first, F32 or F64, and returns the kernel suffix.
func (k *kern) quantFloat(op string, os ...device.Operand) string {
	dt := os[0].DType
	if dt != dtype.F32 && dt != dtype.F64 {
		k.bad(op, "dtype %s: want F32 or F64", dt)
	}
	for i, o := range os {
		k.want(op, "operand "+string(rune('0'+i)), o, dt, false)
		k.sameLen(op, o, os[0])
	}
	return Suffix(dt)
}

// FakeQuantize runs fake_quantize_T, one thread per element.
func (k *kern) FakeQuantize(dst, src, scale device.Operand, rows int) {
	const op = "fake_quantize"
	suf := k.quantFloat(op, src, dst)
	args := k.scaleArgs(op, src.Len(), rows, scale)
	if n := src.Len(); n > 0 {
		k.launch("fake_quantize_"+suf, Linear(n), append([]Arg{k.Ptr(dst), k.Ptr(src), k.Ptr(scale)}, args...)...)
	}
}

// FakeQuantizeGrad runs fake_quantize_grad_T, one thread per element.
func (k *kern) FakeQuantizeGrad(dx, dy, src, scale device.Operand, rows int) {
	const op = "fake_quantize_grad"
	suf := k.quantFloat(op, src, dx, dy)
	args := k.scaleArgs(op, src.Len(), rows, scale)
	if n := src.Len(); n > 0 {
		k.launch("fake_quantize_grad_"+suf, Linear(n),
			append([]Arg{k.Ptr(dx), k.Ptr(dy), k.Ptr(src), k.Ptr(scale)}, args...)...)
	}
}

// i8Out is where gemm_i8 writes: y's element of output (row, col) is
// row·srow + (col/pcol)·souter + (col%pcol)·sinner, the scale and bias
// index is the row (scaleRows) or the column.
type i8Out struct {
	y, wscale, bias            device.Operand
	srow, pcol, souter, sinner int
	scaleRows, addZero, relu   bool
}

// gemmI8 queues gemm_i8: a (m, kk) · b (n, kk)ᵀ, rows of a and b kk
// apart, dequantized into o.
func (k *kern) gemmI8(a, b device.Operand, m, n, kk int, xscale device.Operand, o i8Out) {
	grid := func(v int) uint32 { return uint32(max(1, min((v+gemmTile-1)/gemmTile, maxGrid))) }
	l := Launch{Grid: [3]uint32{grid(n), grid(m), 1}, Block: [3]uint32{256, 1, 1}}
	k.launch("gemm_i8", l, k.Ptr(a), k.Ptr(b), I64(int64(m)), I64(int64(n)), I64(int64(kk)), I64(int64(kk)), I64(int64(kk)),
		k.Ptr(o.y), k.Ptr(xscale), k.Ptr(o.wscale), k.Ptr(o.bias),
		I64(int64(o.srow)), I64(int64(o.pcol)), I64(int64(o.souter)), I64(int64(o.sinner)),
		Int(b2i(o.scaleRows)), Int(b2i(o.addZero)), Int(b2i(o.relu)))
}

// i8Common checks the operands LinearI8 and Conv2dI8 share.
func (k *kern) i8Common(op string, y, xq, wq, xscale, wscale, bias device.Operand, outs int) {
	k.want(op, "y", y, dtype.F32, false)
	k.want(op, "xq", xq, dtype.I8, false)
	k.want(op, "wq", wq, dtype.I8, false)
	k.want(op, "xscale", xscale, dtype.F32, false)
	k.want(op, "wscale", wscale, dtype.F32, false)
	k.want(op, "bias", bias, dtype.F32, true)
	if xscale.Len() != 1 || wscale.Len() != outs || (!bias.Nil() && bias.Len() != outs) {
		k.bad(op, "%d input scales, %d weight scales and bias %v: want 1 input scale and %d weight scales and biases",
			xscale.Len(), wscale.Len(), bias.Shape, outs)
	}
}

// LinearI8 runs gemm_i8 on xq and wq straight into y.
func (k *kern) LinearI8(y, xq, wq, xscale, wscale, bias device.Operand, m, n, kk int) {
	const op = "linear_i8"
	k.i8Common(op, y, xq, wq, xscale, wscale, bias, n)
	if m < 0 || n < 0 || kk < 1 || kk > kernels.MaxI8K || y.Len() != m*n || xq.Len() != m*kk || wq.Len() != n*kk {
		k.bad(op, "m=%d n=%d k=%d with y %v, x %v, w %v: want 1 ≤ k ≤ %d, y m·n, x m·k and w n·k elements",
			m, n, kk, y.Shape, xq.Shape, wq.Shape, kernels.MaxI8K)
	}
	if m == 0 || n == 0 {
		return
	}
	k.gemmI8(xq, wq, m, n, kk, xscale, i8Out{y: y, wscale: wscale, bias: bias, srow: n, pcol: n, sinner: 1})
}

// Conv2dI8, per group and per run of samples that col holds: conv_im2row_i8
// writes the (samples·OH·OW, C/G·R·S) matrix, and gemm_i8 multiplies the
// group's filters (K/G, C/G·R·S) by it into y, filter k's scale and bias.
func (k *kern) Conv2dI8(p device.Conv2d, y, xq, wq, xscale, wscale, bias, col, acc device.Operand, relu bool) {
	const op = "conv2d_i8"
	k.i8Common(op, y, xq, wq, xscale, wscale, bias, p.K)
	k.convShape(op, p, y, xq, wq)
	cw, aw := p.I8Workspace()
	k.want(op, "col", col, dtype.I8, cw == 0)
	k.want(op, "acc", acc, dtype.I32, aw == 0)
	crs, ohw := p.C/p.Groups*p.R*p.S, p.OH*p.OW
	if crs > kernels.MaxI8K || (cw > 0 && col.Len() < cw) || (aw > 0 && acc.Len() < aw) {
		k.bad(op, "C/G·R·S = %d, workspaces %v and %v: want C/G·R·S ≤ %d and workspaces of %d and %d elements",
			crs, col.Shape, acc.Shape, kernels.MaxI8K, cw, aw)
	}
	if p.N == 0 || p.K == 0 || ohw == 0 {
		return
	}
	per := max(1, min(p.N, cw/(max(crs, 1)*ohw)))
	kg := p.K / p.Groups
	for n0 := 0; n0 < p.N; n0 += per {
		cnt := min(per, p.N-n0)
		for g := 0; g < p.Groups; g++ {
			k.im2row(p, col, xq, n0, cnt, g)
			o := i8Out{y: at(y, (n0*p.K+g*kg)*ohw), wscale: at(wscale, g*kg), bias: atOrNil(bias, g*kg),
				srow: ohw, pcol: ohw, souter: p.K * ohw, sinner: 1, scaleRows: true, addZero: true, relu: relu}
			k.gemmI8(at(wq, g*kg*crs), col, kg, cnt*ohw, crs, xscale, o)
		}
	}
}

// im2row queues conv_im2row_i8 of samples n0 … n0+cnt−1, group g, of x.
func (k *kern) im2row(p device.Conv2d, col, x device.Operand, n0, cnt, g int) {
	src := at(x, (n0*p.C+g*(p.C/p.Groups))*p.H*p.W)
	n := cnt * p.OH * p.OW * p.C / p.Groups * p.R * p.S
	k.launch("conv_im2row_i8", Linear(n), append([]Arg{k.Ptr(col), k.Ptr(src), I64(int64(cnt)), I64(int64(p.C * p.H * p.W))},
		convArgs(p)...)...)
}

// atOrNil is at for an operand that may be nil (then it stays nil).
func atOrNil(o device.Operand, off int) device.Operand {
	if o.Nil() {
		return o
	}
	return at(o, off)
}
