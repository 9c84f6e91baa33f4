package kernels

import (
	"math"
	"unsafe"
)

// Unary op codes, in the order of device.UnaryOp.
const (
	UNeg = iota
	UAbs
	UExp
	ULog
	USqrt
	URsqrt
	UTanh
	USigmoid
	URelu
	UGeluTanh
	UGeluErf
	UPow
	UScale
	UAddScalar
)

// Binary op codes, in the order of device.BinaryOp.
const (
	BAdd = iota
	BSub
	BMul
	BDiv
	BMax
	BMin
	BEq
	BNe
	BLt
	BLe
	BGt
	BGe
)

const (
	sqrt2OverPi = 0.7978845608028654 // √(2/π)
	geluC       = 0.044715
	invSqrt2    = 0.7071067811865476
	invSqrt2Pi  = 0.3989422804014327 // 1/√(2π)
)

// UnaryFunc returns the scalar function of a unary op code.
func UnaryFunc(op int, arg float64) func(float64) float64 {
	switch op {
	case UNeg:
		return func(x float64) float64 { return -x }
	case UAbs:
		return math.Abs
	case UExp:
		return math.Exp
	case ULog:
		return math.Log
	case USqrt:
		return math.Sqrt
	case URsqrt:
		return func(x float64) float64 { return 1 / math.Sqrt(x) }
	case UTanh:
		return math.Tanh
	case USigmoid:
		return sigmoid
	case URelu:
		return func(x float64) float64 {
			if x > 0 {
				return x
			}
			return 0
		}
	case UGeluTanh:
		return func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(sqrt2OverPi*(x+geluC*x*x*x))) }
	case UGeluErf:
		return func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x*invSqrt2)) }
	case UPow:
		return func(x float64) float64 { return math.Pow(x, arg) }
	case UScale:
		return func(x float64) float64 { return x * arg }
	case UAddScalar:
		return func(x float64) float64 { return x + arg }
	}
	panic("kernels: unknown unary op")
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// UnaryDeriv returns op'(x) given the input x and output y of a unary op.
func UnaryDeriv(op int, arg float64) func(x, y float64) float64 {
	switch op {
	case UNeg:
		return func(_, _ float64) float64 { return -1 }
	case UAbs:
		return func(x, _ float64) float64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return 0
		}
	case UExp:
		return func(_, y float64) float64 { return y }
	case ULog:
		return func(x, _ float64) float64 { return 1 / x }
	case USqrt:
		return func(_, y float64) float64 { return 0.5 / y }
	case URsqrt:
		return func(_, y float64) float64 { return -0.5 * y * y * y }
	case UTanh:
		return func(_, y float64) float64 { return 1 - y*y }
	case USigmoid:
		return func(_, y float64) float64 { return y * (1 - y) }
	case URelu:
		return func(_, y float64) float64 {
			if y > 0 {
				return 1
			}
			return 0
		}
	case UGeluTanh:
		return func(x, _ float64) float64 {
			u := sqrt2OverPi * (x + geluC*x*x*x)
			t := math.Tanh(u)
			return 0.5*(1+t) + 0.5*x*(1-t*t)*sqrt2OverPi*(1+3*geluC*x*x)
		}
	case UGeluErf:
		return func(x, _ float64) float64 {
			return 0.5*(1+math.Erf(x*invSqrt2)) + x*invSqrt2Pi*math.Exp(-0.5*x*x)
		}
	case UPow:
		return func(x, _ float64) float64 {
			if arg == 0 {
				return 0
			}
			return arg * math.Pow(x, arg-1)
		}
	case UScale:
		return func(_, _ float64) float64 { return arg }
	case UAddScalar:
		return func(_, _ float64) float64 { return 1 }
	}
	panic("kernels: unknown unary op")
}

// Unary writes dst[dl] = op(src[sl]) over dl's shape.
//
// float32 Exp, Tanh, Sigmoid and GeluTanh take the fast float32 functions
// of fastmath.go (AVX2 on contiguous runs; error bounds there); float64,
// and every other op, call the float64 function of UnaryFunc. Long
// contiguous runs are split across the workers.
func Unary[T Float](op int, arg float64, dst []T, dl Layout, src []T, sl Layout) {
	switch op {
	case URelu:
		walk(dl.Shape, []Layout{dl, sl}, func(o []int, n int, inc []int) {
			d, s, di, si := o[0], o[1], inc[0], inc[1]
			if di == 1 && si == 1 {
				reluRun(dst[d:d+n], src[s:s+n])
				return
			}
			for range n {
				v := src[s]
				if !(v > 0) {
					v = 0
				}
				dst[d] = v
				d += di
				s += si
			}
		})
		return
	case UScale:
		a := T(arg)
		walk(dl.Shape, []Layout{dl, sl}, func(o []int, n int, inc []int) {
			d, s, di, si := o[0], o[1], inc[0], inc[1]
			if di == 1 && si == 1 {
				scaleRun(dst[d:d+n], src[s:s+n], a)
				return
			}
			for range n {
				dst[d] = src[s] * a
				d += di
				s += si
			}
		})
		return
	}
	if d32, ok := f32s(dst); ok && fastUnaryOp(op) {
		s32, _ := f32s(src)
		f := fastScalar(op)
		walk(dl.Shape, []Layout{dl, sl}, func(o []int, n int, inc []int) {
			d, s, di, si := o[0], o[1], inc[0], inc[1]
			if di == 1 && si == 1 {
				fastUnaryRun(op, d32[d:d+n], s32[s:s+n])
				return
			}
			for range n {
				d32[d] = f(s32[s])
				d += di
				s += si
			}
		})
		return
	}
	f := UnaryFunc(op, arg)
	walk(dl.Shape, []Layout{dl, sl}, func(o []int, n int, inc []int) {
		d, s, di, si := o[0], o[1], inc[0], inc[1]
		if di == 1 && si == 1 && n >= slowParallelMin {
			dr, sr := dst[d:d+n], src[s:s+n]
			claimFor(n, slowGrain, func(lo, hi int) {
				for i, v := range sr[lo:hi] {
					dr[lo+i] = T(f(float64(v)))
				}
			})
			return
		}
		for range n {
			dst[d] = T(f(float64(src[s])))
			d += di
			s += si
		}
	})
}

// Runs of the ops that call a float64 math function per element (5–20 ns
// each) are split across the workers from slowParallelMin elements, in
// pieces of slowGrain.
const (
	slowParallelMin = 1 << 15
	slowGrain       = 1 << 14
)

// UnaryGrad writes dx = dy·op'(x, y) for contiguous slices of one length
// (x or y may be nil when the op does not read it). Exp is dy·y in either
// type; float32 Tanh, Sigmoid and GeluTanh are computed in float32
// (GeluTanh through fastmath.go); the rest call UnaryDeriv's float64
// function. Long slices are split across the workers.
func UnaryGrad[T Float](op int, arg float64, dx, dy, x, y []T) {
	switch op {
	case URelu:
		reluGradRun(dx, dy, y)
		return
	case UNeg:
		for i := range dx {
			dx[i] = -dy[i]
		}
		return
	case UScale:
		scaleRun(dx, dy, T(arg))
		return
	case UAddScalar:
		copy(dx, dy)
		return
	case UExp:
		// dy·y rounded once, in either type: the product of two floats of
		// T is exact in float64.
		binaryRun(BMul, dx, dy, y)
		return
	}
	if dx32, ok := f32s(dx); ok && (op == UTanh || op == USigmoid || op == UGeluTanh) {
		dy32, _ := f32s(dy)
		if op == UGeluTanh {
			x32, _ := f32s(x)
			geluTanhGradRun(dx32, dy32, x32)
			return
		}
		y32, _ := f32s(y)
		part := func(lo, hi int) { tanhSigmoidGrad32(op, dx32[lo:hi], dy32[lo:hi], y32[lo:hi]) }
		if len(dx) < vecParallelMin {
			part(0, len(dx))
		} else {
			claimFor(len(dx), vecGrain, part)
		}
		return
	}
	f := UnaryDeriv(op, arg)
	part := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			var xv, yv float64
			if x != nil {
				xv = float64(x[i])
			}
			if y != nil {
				yv = float64(y[i])
			}
			dx[i] = T(float64(dy[i]) * f(xv, yv))
		}
	}
	if len(dx) < slowParallelMin {
		part(0, len(dx))
		return
	}
	claimFor(len(dx), slowGrain, part)
}

// tanhSigmoidGrad32 writes dx = dy·(1−y)·(1+y) (tanh) or dy·y·(1−y)
// (sigmoid) in float32 from the forward output y. (1−y)(1+y) rather than
// 1−y² keeps the relative accuracy where y is near ±1.
func tanhSigmoidGrad32(op int, dx, dy, y []float32) {
	dy, y = dy[:len(dx)], y[:len(dx)]
	if op == UTanh {
		for i, v := range y {
			dx[i] = dy[i] * ((1 - v) * (1 + v))
		}
		return
	}
	for i, v := range y {
		dx[i] = dy[i] * (v * (1 - v))
	}
}

// Binary writes dst[dl] = a[al] op b[bl] over dl's shape.
func Binary[T Float](op int, dst []T, dl Layout, a []T, al Layout, b []T, bl Layout) {
	f := binaryFunc[T](op)
	walk(dl.Shape, []Layout{dl, al, bl}, func(o []int, n int, inc []int) {
		d, p, q := o[0], o[1], o[2]
		di, pi, qi := inc[0], inc[1], inc[2]
		switch {
		case (op == BAdd || op == BSub || op == BMul) && di == 1 && pi == 1 && qi == 1:
			binaryRun(op, dst[d:d+n], a[p:p+n], b[q:q+n])
		case (op == BAdd || op == BSub || op == BMul) && di == 1 && (pi == 1 && qi == 0 || pi == 0 && qi == 1):
			// One operand is constant over the run (a broadcast bias or
			// scale: (N, C, H, W) with (1, C, 1, 1)).
			if pi == 1 {
				scalarRun(op, dst[d:d+n], a[p:p+n], b[q], false)
			} else {
				scalarRun(op, dst[d:d+n], b[q:q+n], a[p], true)
			}
		default:
			for range n {
				dst[d] = f(a[p], b[q])
				d += di
				p += pi
				q += qi
			}
		}
	})
}

// scalarRun sets d[i] = v[i] op c, or c op v[i] when swapped, for op BAdd,
// BSub or BMul: the same values as the generic loop, without its call per
// element.
func scalarRun[T Float](op int, d, v []T, c T, swapped bool) {
	v = v[:len(d)]
	switch {
	case op == BAdd:
		for i := range d {
			d[i] = v[i] + c
		}
	case op == BMul:
		for i := range d {
			d[i] = v[i] * c
		}
	case swapped: // c − v
		for i := range d {
			d[i] = c - v[i]
		}
	default:
		for i := range d {
			d[i] = v[i] - c
		}
	}
}

func compare[T Float](op int) func(x, y T) T {
	b := func(c bool) T {
		if c {
			return 1
		}
		return 0
	}
	switch op {
	case BEq:
		return func(x, y T) T { return b(x == y) }
	case BNe:
		return func(x, y T) T { return b(x != y) }
	case BLt:
		return func(x, y T) T { return b(x < y) }
	case BLe:
		return func(x, y T) T { return b(x <= y) }
	case BGt:
		return func(x, y T) T { return b(x > y) }
	case BGe:
		return func(x, y T) T { return b(x >= y) }
	}
	panic("kernels: unknown binary op")
}

// Axpy adds alpha·x[xl] to the contiguous y (starting at yOff) over xl's shape.
func Axpy[T Float](alpha float64, x []T, xl Layout, y []T, yOff int) {
	a := T(alpha)
	yl := Layout{Off: yOff, Shape: xl.Shape}
	walk(xl.Shape, []Layout{xl, yl}, func(o []int, n int, inc []int) {
		p, q, pi, qi := o[0], o[1], inc[0], inc[1]
		if pi == 1 && qi == 1 {
			axpyRun(a, x[p:p+n], y[q:q+n])
			return
		}
		for range n {
			y[q] += a * x[p]
			p += pi
			q += qi
		}
	})
}

// Where writes dst = cond ≠ 0 ? a : b over dl's shape.
func Where[T Float](dst []T, dl Layout, cond []float64, cl Layout, a []T, al Layout, b []T, bl Layout) {
	walk(dl.Shape, []Layout{dl, cl, al, bl}, func(o []int, n int, inc []int) {
		d, c, p, q := o[0], o[1], o[2], o[3]
		for range n {
			if cond[c] != 0 {
				dst[d] = a[p]
			} else {
				dst[d] = b[q]
			}
			d += inc[0]
			c += inc[1]
			p += inc[2]
			q += inc[3]
		}
	})
}

// Fill sets dst[dl] to v.
func Fill[T any](dst []T, dl Layout, v T) {
	walk(dl.Shape, []Layout{dl}, func(o []int, n int, inc []int) {
		d, di := o[0], inc[0]
		if di == 1 {
			fillRun(dst[d:d+n], v)
			return
		}
		for range n {
			dst[d] = v
			d += di
		}
	})
}

// Copy copies src[sl] into dst[dl] over dl's shape (same element type).
// A copy of at least copyParallelBytes whose source and destination do
// not overlap is split across the workers along its outermost dimension
// (a strided copy, as a permutation of attention heads, is otherwise one
// core's walk while the others wait).
func Copy[T any](dst []T, dl Layout, src []T, sl Layout) {
	size := int(unsafe.Sizeof(*new(T)))
	if d := outerDim(dl.Shape); d >= 0 && len(sl.Shape) == len(dl.Shape) && dl.Len()*size >= copyParallelBytes &&
		Workers() > 1 && !overlaps(dst, dl, src, sl) {
		grain := max(1, copyGrainBytes/max(1, dl.Len()/dl.Shape[d]*size))
		ParallelFor(dl.Shape[d], grain, func(lo, hi int) {
			copyWalk(dst, rowsOf(dl, d, lo, hi), src, rowsOf(sl, d, lo, hi))
		})
		return
	}
	copyWalk(dst, dl, src, sl)
}

// copyParallelBytes is the size from which Copy splits across workers,
// and copyGrainBytes the least a worker takes.
const (
	copyParallelBytes = 1 << 20
	copyGrainBytes    = 1 << 18
)

// outerDim returns the first dimension of shape longer than 1, or −1.
func outerDim(shape []int) int {
	for i, s := range shape {
		if s > 1 {
			return i
		}
	}
	return -1
}

// rowsOf is l restricted to [lo, hi) of dimension d.
func rowsOf(l Layout, d, lo, hi int) Layout {
	st := stridesOf(l)
	shape := append([]int(nil), l.Shape...)
	shape[d] = hi - lo
	return Layout{Off: l.Off + lo*st[d], Shape: shape, Strides: st}
}

// overlaps says whether the elements dl and sl reach in dst and src may
// share memory (or a stride is negative, which Copy does not split).
func overlaps[T any](dst []T, dl Layout, src []T, sl Layout) bool {
	d0, d1, okd := span(dst, dl)
	s0, s1, oks := span(src, sl)
	return !okd || !oks || (d0 < s1 && s0 < d1)
}

// span returns the addresses [first, past the last) of the elements l
// reaches in s, and false for a negative stride or an empty layout.
func span[T any](s []T, l Layout) (lo, hi uintptr, ok bool) {
	if len(s) == 0 || l.Len() == 0 {
		return 0, 0, false
	}
	last := l.Off
	for i, st := range stridesOf(l) {
		if st < 0 {
			return 0, 0, false
		}
		last += (l.Shape[i] - 1) * st
	}
	size := unsafe.Sizeof(s[0])
	base := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return base + uintptr(l.Off)*size, base + uintptr(last+1)*size, true
}

// copyWalk is Copy on the calling goroutine.
func copyWalk[T any](dst []T, dl Layout, src []T, sl Layout) {
	walk(dl.Shape, []Layout{dl, sl}, func(o []int, n int, inc []int) {
		d, s, di, si := o[0], o[1], inc[0], inc[1]
		if di == 1 && si == 1 {
			copy(dst[d:d+n], src[s:s+n])
			return
		}
		for range n {
			dst[d] = src[s]
			d += di
			s += si
		}
	})
}

// Convert copies src[sl] into dst[dl], converting through float64 element
// by element with the given load and store functions.
func Convert(dl Layout, sl Layout, load func(i int) float64, store func(i int, v float64)) {
	walk(dl.Shape, []Layout{dl, sl}, func(o []int, n int, inc []int) {
		d, s, di, si := o[0], o[1], inc[0], inc[1]
		for range n {
			store(d, load(s))
			d += di
			s += si
		}
	})
}

// binaryFunc returns the scalar function of a binary op code.
func binaryFunc[T Float](op int) func(x, y T) T {
	switch op {
	case BAdd:
		return func(x, y T) T { return x + y }
	case BSub:
		return func(x, y T) T { return x - y }
	case BMul:
		return func(x, y T) T { return x * y }
	case BDiv:
		return func(x, y T) T { return x / y }
	case BMax:
		return func(x, y T) T {
			if x != x || x > y {
				return x
			}
			return y
		}
	case BMin:
		return func(x, y T) T {
			if x != x || x < y {
				return x
			}
			return y
		}
	}
	return compare[T](op)
}

// BinaryFlat is Binary on contiguous slices of one length, on the calling
// goroutine for short slices: the same values, without a layout walk (it
// allocates nothing), for callers that run tiles.
func BinaryFlat[T Float](op int, dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	if op == BAdd || op == BSub || op == BMul {
		binaryRun(op, dst, a, b)
		return
	}
	f := binaryFunc[T](op)
	for i := range dst {
		dst[i] = f(a[i], b[i])
	}
}

// UnaryFlat is Unary on contiguous slices of one length, on the calling
// goroutine: the same values (the same run functions), without a layout
// walk, for callers that run tiles.
func UnaryFlat[T Float](op int, arg float64, dst, src []T) {
	src = src[:len(dst)]
	switch {
	case op == URelu:
		reluRun(dst, src)
		return
	case op == UScale:
		scaleRun(dst, src, T(arg))
		return
	}
	if d32, ok := f32s(dst); ok && fastUnaryOp(op) {
		s32, _ := f32s(src)
		fastUnaryRun(op, d32, s32)
		return
	}
	f := UnaryFunc(op, arg)
	for i, v := range src {
		dst[i] = T(f(float64(v)))
	}
}
