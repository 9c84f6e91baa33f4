package kernels

import "math"

// Softmax writes dst = softmax(src) (log-softmax when log) along each row of
// the contiguous (rows, cols) slices. It subtracts the row maximum before
// exponentiating, so large logits do not overflow, and sums in float64.
// A row whose maximum is -Inf or NaN yields NaN, as in PyTorch.
func Softmax[T Float](dst, src []T, rows, cols int, log bool) {
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
// dx = dy - exp(y)·Σ dy for log-softmax, the sums per row in float64.
func SoftmaxGrad[T Float](dx, dy, y []T, rows, cols int, log bool) {
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
