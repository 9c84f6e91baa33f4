package cpu

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

func (kern) Unary(op device.UnaryOp, dst, src device.Operand, arg float64) {
	if wide(dst) {
		d, dl := f64(dst)
		x, xl := f64(src)
		kernels.Unary(int(op), arg, d, lay(dl), x, lay(xl))
		put64(dst, d)
		return
	}
	if anyHalf(dst, src) {
		if op == device.Relu && inRegister && sameHalf(dst, src) {
			kernels.ReluHalf(half(dst), half(src), dst.DType == dtype.BF16)
			return
		}
		if op == device.GeluTanh && inRegister && dst.DType == dtype.BF16 && sameHalf(dst, src) {
			kernels.GeluTanhBF16(half(dst), half(src))
			return
		}
		tiled(dst, []device.Operand{src}, func(d []float32, in [][]float32) {
			kernels.UnaryFlat(int(op), arg, d, in[0])
		})
		return
	}
	d, dl := f32(dst)
	x, xl := f32(src)
	kernels.Unary(int(op), arg, d, lay(dl), x, lay(xl))
	put32(dst, d)
}

// span returns the contiguous elements of o within its block's slice.
func span[T any](s []T, o device.Operand) []T { return s[o.Off : o.Off+o.Len()] }

func opt32(o device.Operand) []float32 {
	if o.Nil() {
		return nil
	}
	return s32(o)
}

func opt64(o device.Operand) []float64 {
	if o.Nil() {
		return nil
	}
	return s64(o)
}

func (kern) UnaryGrad(op device.UnaryOp, dx, dy, x, y device.Operand, arg float64) {
	if wide(dx) {
		d := s64(dx)
		kernels.UnaryGrad(int(op), arg, d, s64(dy), opt64(x), opt64(y))
		put64(dx, d)
		return
	}
	if anyHalf(dx, dy, x, y) {
		if op == device.Relu && inRegister && sameHalf(dx, dy, y) {
			kernels.ReluGradHalf(half(dx), half(dy), half(y), dx.DType == dtype.BF16)
			return
		}
		if op == device.GeluTanh && inRegister && dx.DType == dtype.BF16 && sameHalf(dx, dy, x) {
			kernels.GeluTanhGradBF16(half(dx), half(dy), half(x))
			return
		}
		tiled(flatten(dx), []device.Operand{flatten(dy), flatten(x), flatten(y)}, func(d []float32, in [][]float32) {
			kernels.UnaryGrad(int(op), arg, d, in[0], in[1], in[2])
		})
		return
	}
	d := s32(dx)
	kernels.UnaryGrad(int(op), arg, d, s32(dy), opt32(x), opt32(y))
	put32(dx, d)
}

func (kern) Binary(op device.BinaryOp, dst, a, b device.Operand) {
	if wide(dst) {
		d, dl := f64(dst)
		x, xl := f64(a)
		y, yl := f64(b)
		kernels.Binary(int(op), d, lay(dl), x, lay(xl), y, lay(yl))
		put64(dst, d)
		return
	}
	if anyHalf(dst, a, b) {
		if inRegister && dst.DType == dtype.BF16 && sameHalf(dst, a, b) &&
			kernels.BinaryBF16(int(op), half(dst), half(a), half(b)) {
			return
		}
		tiled(dst, []device.Operand{a, b}, func(d []float32, in [][]float32) {
			kernels.BinaryFlat(int(op), d, in[0], in[1])
		})
		return
	}
	d, dl := f32(dst)
	x, xl := f32(a)
	y, yl := f32(b)
	kernels.Binary(int(op), d, lay(dl), x, lay(xl), y, lay(yl))
	put32(dst, d)
}

func (kern) Axpy(alpha float64, x, y device.Operand) {
	if wide(y) {
		d, dl := f64(y)
		v, vl := f64(x)
		kernels.Axpy(alpha, v, lay(vl), d, dl.Off)
		put64(y, d)
		return
	}
	switch {
	case inRegister && y.DType == dtype.BF16 && sameHalf(x, y):
		kernels.AxpyBF16(alpha, half(x), half(y))
		return
	case inRegister && anyHalf(x, y):
		// Tile by tile, y (contiguous) viewed over x's shape: no copy of
		// either operand's extent.
		yv := y
		yv.Shape, yv.Strides = x.Shape, nil
		tiled(yv, []device.Operand{yv, x}, func(d []float32, in [][]float32) {
			copy(d, in[0])
			kernels.Axpy(alpha, in[1], kernels.Layout{Shape: []int{len(d)}}, d, 0)
		})
		return
	}
	d, dl := f32(y)
	v, vl := f32(x)
	kernels.Axpy(alpha, v, lay(vl), d, dl.Off)
	put32(y, d)
}

func (kern) Where(dst, cond, a, b device.Operand) {
	c, cl := f64(cond)
	if wide(dst) {
		d, dl := f64(dst)
		x, xl := f64(a)
		y, yl := f64(b)
		kernels.Where(d, lay(dl), c, lay(cl), x, lay(xl), y, lay(yl))
		put64(dst, d)
		return
	}
	d, dl := f32(dst)
	x, xl := f32(a)
	y, yl := f32(b)
	kernels.Where(d, lay(dl), c, lay(cl), x, lay(xl), y, lay(yl))
	put32(dst, d)
}

func (kern) Reduce(op device.ReduceOp, dst, src device.Operand, arg float64) {
	out, ol := f64(dst)
	store := func(i int, v float64) { out[ol.Off+i] = v }
	if wide(src) {
		x, xl := f64(src)
		kernels.Reduce(int(op), arg, dst.Shape, x, lay(xl), store)
	} else if !reduceHalf(op, dst.Shape, src, store) {
		x, xl := f32(src)
		kernels.Reduce(int(op), arg, dst.Shape, x, lay(xl), store)
	}
	put64(dst, out)
}

func (kern) Gemm(g device.Gemm) {
	if err := g.CheckBias(); err != nil {
		panic("cpu: " + err.Error())
	}
	args := kernels.GemmArgs{
		TransA: g.TransA, TransB: g.TransB, M: g.M, N: g.N, K: g.K, Alpha: g.Alpha, Beta: g.Beta,
		OffA: g.A.Off, OffB: g.B.Off, OffC: g.C.Off, LdA: g.LdA, LdB: g.LdB, LdC: g.LdC,
		Batch: g.Batch, StrideA: g.StrideA, StrideB: g.StrideB, StrideC: g.StrideC,
	}
	ar, ac, br, bc := g.M, g.K, g.K, g.N
	if g.TransA {
		ar, ac = ac, ar
	}
	if g.TransB {
		br, bc = bc, br
	}
	n := max(g.Batch, 1)
	if wide(g.C) {
		c, lo := gemmIn(g.C, f64, &args.OffC, g.StrideC, g.LdC, g.M, g.N, n)
		a, _ := gemmIn(g.A, f64, &args.OffA, g.StrideA, g.LdA, ar, ac, n)
		b, _ := gemmIn(g.B, f64, &args.OffB, g.StrideB, g.LdB, br, bc, n)
		kernels.GemmBias(args, a, b, gemmBias(g, f64), c)
		if g.C.DType != dtype.F64 {
			putAt64(g.C, lo, c)
		}
		return
	}
	bias := gemmBias(g, f32)
	if gemmHalfRows(g) {
		gemmHalfBands(g, args, bias)
		return
	}
	c, lo := gemmIn(g.C, gemmOut32(g), &args.OffC, g.StrideC, g.LdC, g.M, g.N, n)
	if g.A.DType.IsLowPrecision() && g.B.DType.IsLowPrecision() {
		// 16-bit operands are read as 16-bit while they are packed: no
		// float32 copy of A or B.
		kernels.GemmHalfBias(args, dtype.AsU16(g.A.Block.Bytes()), dtype.AsU16(g.B.Block.Bytes()),
			g.A.DType == dtype.BF16, g.B.DType == dtype.BF16, bias, c)
	} else {
		a, _ := gemmIn(g.A, f32, &args.OffA, g.StrideA, g.LdA, ar, ac, n)
		b, _ := gemmIn(g.B, f32, &args.OffB, g.StrideB, g.LdB, br, bc, n)
		kernels.GemmBias(args, a, b, bias, c)
	}
	if g.C.DType != dtype.F32 {
		putAt32(g.C, lo, c)
	}
}

// gemmBias returns g's bias in the compute dtype (f32 or f64: in place for
// that dtype, else its N elements widened), or nil when it has none. A
// 16-bit C is narrowed once, after the bias is added.
func gemmBias[T any](g device.Gemm, f func(device.Operand) ([]T, device.Operand)) []T {
	if g.Bias.Block == nil || g.N == 0 {
		return nil
	}
	v, r := f(g.Bias)
	return v[r.Off : r.Off+g.N]
}

// gemmOut32 is f32 for g's C, except that a C the GEMM overwrites whole
// (beta 0, no gaps between its rows or matrices) is not converted: its old
// values are never read.
func gemmOut32(g device.Gemm) func(device.Operand) ([]float32, device.Operand) {
	whole := g.LdC == g.N && (max(g.Batch, 1) == 1 || g.StrideC == g.M*g.N)
	if g.Beta != 0 || !whole {
		return f32
	}
	return func(o device.Operand) ([]float32, device.Operand) {
		return widened(o, dtype.F32, dtype.AsF32, func([]float32, dtype.DType, []byte) {})
	}
}

// gemmIn widens a GEMM operand with f (f32 or f64) over its footprint:
// batch matrices of rows×cols, stride apart, rows ld apart, from *off on.
// It rebases *off onto the result and returns the footprint's first
// element (nothing moves for an operand of the compute dtype).
func gemmIn[T any](o device.Operand, f func(device.Operand) ([]T, device.Operand), off *int, stride, ld, rows, cols, batch int) ([]T, int) {
	lo, hi := *off, *off
	if rows > 0 && cols > 0 {
		hi = lo + (batch-1)*stride + (rows-1)*ld + cols
	}
	o.Off = lo
	o.Shape, o.Strides = []int{hi - lo}, nil
	v, r := f(o)
	*off -= lo - r.Off
	return v, lo
}
