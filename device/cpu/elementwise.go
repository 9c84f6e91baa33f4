package cpu

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

func (kern) Unary(op device.UnaryOp, dst, src device.Operand, arg float64) {
	if wide(dst) {
		d := f64(dst)
		kernels.Unary(int(op), arg, d, lay(dst), f64(src), lay(src))
		put64(dst, d)
		return
	}
	d := f32(dst)
	kernels.Unary(int(op), arg, d, lay(dst), f32(src), lay(src))
	put32(dst, d)
}

// span returns the contiguous elements of o within its block's slice.
func span[T any](s []T, o device.Operand) []T { return s[o.Off : o.Off+o.Len()] }

func opt32(o device.Operand) []float32 {
	if o.Nil() {
		return nil
	}
	return span(f32(o), o)
}

func opt64(o device.Operand) []float64 {
	if o.Nil() {
		return nil
	}
	return span(f64(o), o)
}

func (kern) UnaryGrad(op device.UnaryOp, dx, dy, x, y device.Operand, arg float64) {
	if wide(dx) {
		d := f64(dx)
		kernels.UnaryGrad(int(op), arg, span(d, dx), span(f64(dy), dy), opt64(x), opt64(y))
		put64(dx, d)
		return
	}
	d := f32(dx)
	kernels.UnaryGrad(int(op), arg, span(d, dx), span(f32(dy), dy), opt32(x), opt32(y))
	put32(dx, d)
}

func (kern) Binary(op device.BinaryOp, dst, a, b device.Operand) {
	if wide(dst) {
		d := f64(dst)
		kernels.Binary(int(op), d, lay(dst), f64(a), lay(a), f64(b), lay(b))
		put64(dst, d)
		return
	}
	d := f32(dst)
	kernels.Binary(int(op), d, lay(dst), f32(a), lay(a), f32(b), lay(b))
	put32(dst, d)
}

func (kern) Axpy(alpha float64, x, y device.Operand) {
	if wide(y) {
		d := f64(y)
		kernels.Axpy(alpha, f64(x), lay(x), d, y.Off)
		put64(y, d)
		return
	}
	d := f32(y)
	kernels.Axpy(alpha, f32(x), lay(x), d, y.Off)
	put32(y, d)
}

func (kern) Where(dst, cond, a, b device.Operand) {
	c := f64(cond)
	if wide(dst) {
		d := f64(dst)
		kernels.Where(d, lay(dst), c, lay(cond), f64(a), lay(a), f64(b), lay(b))
		put64(dst, d)
		return
	}
	d := f32(dst)
	kernels.Where(d, lay(dst), c, lay(cond), f32(a), lay(a), f32(b), lay(b))
	put32(dst, d)
}

func (kern) Reduce(op device.ReduceOp, dst, src device.Operand, arg float64) {
	out := f64(dst)
	store := func(i int, v float64) { out[dst.Off+i] = v }
	if wide(src) {
		kernels.Reduce(int(op), arg, dst.Shape, f64(src), lay(src), store)
	} else {
		kernels.Reduce(int(op), arg, dst.Shape, f32(src), lay(src), store)
	}
	put64(dst, out)
}

func (kern) Gemm(g device.Gemm) {
	args := kernels.GemmArgs{
		TransA: g.TransA, TransB: g.TransB, M: g.M, N: g.N, K: g.K, Alpha: g.Alpha, Beta: g.Beta,
		OffA: g.A.Off, OffB: g.B.Off, OffC: g.C.Off, LdA: g.LdA, LdB: g.LdB, LdC: g.LdC,
		Batch: g.Batch, StrideA: g.StrideA, StrideB: g.StrideB, StrideC: g.StrideC,
	}
	if wide(g.C) {
		c := f64(g.C)
		kernels.Gemm(args, f64(g.A), f64(g.B), c)
		put64(g.C, c)
		return
	}
	c := f32(g.C)
	if g.A.DType.IsLowPrecision() && g.B.DType.IsLowPrecision() {
		// 16-bit operands are widened while they are packed: no float32
		// copy of A or B.
		kernels.GemmHalf(args, dtype.AsU16(g.A.Block.Bytes()), dtype.AsU16(g.B.Block.Bytes()),
			g.A.DType == dtype.BF16, g.B.DType == dtype.BF16, c)
	} else {
		kernels.Gemm(args, f32(g.A), f32(g.B), c)
	}
	put32(g.C, c)
}
