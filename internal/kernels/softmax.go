package kernels

import "math"

// Softmax writes dst = softmax(src) (log-softmax when log) along each row of
// the contiguous (rows, cols) slices. It subtracts the row maximum before
// exponentiating, so large logits do not overflow, and sums in float64.
// A row whose maximum is -Inf or NaN yields NaN, as in PyTorch.
//
// float32 rows take exp32 (fastmath.go: within 1.03 ulp) on x − max rounded
// to float32, then one rounded multiply by 1/sum (or, for log-softmax, x −
// (max + log sum) in float64, rounded once). Rows are shared out across
// the workers when the call holds at least rowsParallelMin elements.
func Softmax[T Float](dst, src []T, rows, cols int, log bool) {
	if d32, ok := f32s(dst); ok {
		s32, _ := f32s(src)
		rowsFor(rows, cols, func(lo, hi int) { softmax32(d32, s32, lo, hi, cols, log) })
		return
	}
	for r := range rows {
		x := src[r*cols : (r+1)*cols]
		y := dst[r*cols : (r+1)*cols]
		m := rowMax(x)
		var s float64
		for _, v := range x {
			s += math.Exp(float64(v) - m)
		}
		if log {
			c := m + math.Log(s)
			for j, v := range x {
				y[j] = T(float64(v) - c)
			}
			continue
		}
		inv := 1 / s
		for j, v := range x {
			y[j] = T(math.Exp(float64(v)-m) * inv)
		}
	}
}

func softmax32(dst, src []float32, lo, hi, cols int, log bool) {
	for r := lo; r < hi; r++ {
		x := src[r*cols : (r+1)*cols]
		y := dst[r*cols : (r+1)*cols]
		m := rowMax(x)
		if log {
			c := m + math.Log(expShiftSum(x, float32(m)))
			for j, v := range x {
				y[j] = float32(float64(v) - c)
			}
			continue
		}
		inv := float32(1 / expShiftRun(y, x, float32(m)))
		for j := range y {
			y[j] *= inv
		}
	}
}

// expShiftSum returns Σ exp32(x − shift) in float64 without writing
// anything but a stack buffer (so a caller may write over x afterwards, or
// have x be its output).
func expShiftSum(x []float32, shift float32) float64 {
	var buf [256]float32
	var s float64
	for len(x) > 0 {
		n := min(len(x), len(buf))
		s += expShiftRun(buf[:n], x[:n], shift)
		x = x[n:]
	}
	return s
}

// Row-wise kernels (softmax, cross entropy) share rows out across the
// workers from rowsParallelMin elements per call, at least rowsGrain
// elements per piece.
const (
	rowsParallelMin = 1 << 17
	rowsGrain       = 1 << 15
)

// rowsFor calls f over the rows [0, rows) of a (rows, cols) call, split
// across the workers when the call is large.
func rowsFor(rows, cols int, f func(lo, hi int)) {
	if rows*cols < rowsParallelMin || rows < 2 {
		f(0, rows)
		return
	}
	claimFor(rows, max(1, rowsGrain/max(cols, 1)), f)
}

// rowMax returns the largest element of x as float64 (-Inf when empty, NaN
// when x holds a NaN).
func rowMax[T Float](x []T) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		f := float64(v)
		if f > m || f != f {
			m = f
			if f != f {
				return m
			}
		}
	}
	return m
}

// SoftmaxGrad writes dx from dy and the forward output y of Softmax, all
// contiguous (rows, cols): dx = y·(dy - Σ dy·y) for softmax and
// dx = dy - exp(y)·Σ dy for log-softmax, the sums per row in float64
// (exp32 for float32, rows shared out across the workers when large).
func SoftmaxGrad[T Float](dx, dy, y []T, rows, cols int, log bool) {
	if dx32, ok := f32s(dx); ok && log {
		dy32, _ := f32s(dy)
		y32, _ := f32s(y)
		rowsFor(rows, cols, func(lo, hi int) { logSoftmaxGrad32(dx32, dy32, y32, lo, hi, cols) })
		return
	}
	for r := range rows {
		g := dy[r*cols : (r+1)*cols]
		o := y[r*cols : (r+1)*cols]
		d := dx[r*cols : (r+1)*cols]
		var s float64
		if log {
			for _, v := range g {
				s += float64(v)
			}
			for j := range d {
				d[j] = T(float64(g[j]) - math.Exp(float64(o[j]))*s)
			}
			continue
		}
		for j, v := range g {
			s += float64(v) * float64(o[j])
		}
		for j := range d {
			d[j] = T(float64(o[j]) * (float64(g[j]) - s))
		}
	}
}

// logSoftmaxGrad32 is SoftmaxGrad for float32 log-softmax rows [lo, hi):
// dx = dy − exp32(y)·Σ dy, in float64 and rounded once, in chunks through
// a stack buffer (so dx may be dy).
func logSoftmaxGrad32(dx, dy, y []float32, lo, hi, cols int) {
	var buf [256]float32
	for r := lo; r < hi; r++ {
		g := dy[r*cols : (r+1)*cols]
		o := y[r*cols : (r+1)*cols]
		d := dx[r*cols : (r+1)*cols]
		var s float64
		for _, v := range g {
			s += float64(v)
		}
		for c0 := 0; c0 < cols; c0 += len(buf) {
			n := min(len(buf), cols-c0)
			e := buf[:n]
			expShiftRun(e, o[c0:c0+n], 0)
			for j, ev := range e {
				d[c0+j] = float32(float64(g[c0+j]) - float64(ev)*s)
			}
		}
	}
}
