package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Helpers of the normalisation, softmax and loss tests are prefixed nsl.

func nslRand(rng *rand.Rand, n int, lo, hi float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = lo + (hi-lo)*rng.Float64()
	}
	return v
}

func nslConv[T Float](v []float64) []T {
	out := make([]T, len(v))
	for i, x := range v {
		out[i] = T(x)
	}
	return out
}

func nslBack[T Float](v []T) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// nslClose fails when got and want differ by more than tol·(1+|want|).
func nslClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*(1+math.Abs(want[i]))) {
			t.Errorf("%s[%d] = %.9g, want %.9g (diff %.3g)", what, i, got[i], want[i], d)
			return
		}
	}
}

// nslNumGrad returns the central-difference gradient of f at x.
func nslNumGrad(f func(x []float64) float64, x []float64) []float64 {
	const h = 1e-5
	g := make([]float64, len(x))
	for i := range x {
		o := x[i]
		x[i] = o + h
		fp := f(x)
		x[i] = o - h
		fm := f(x)
		x[i] = o
		g[i] = (fp - fm) / (2 * h)
	}
	return g
}

func nslDot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// nslSoftmaxRef is softmax (or log-softmax) by the textbook formula,
// exp(x_j)/Σ exp(x_k), without the max shift (inputs are small).
func nslSoftmaxRef(x []float64, rows, cols int, log bool) []float64 {
	y := make([]float64, len(x))
	for r := range rows {
		var s float64
		for j := range cols {
			s += math.Exp(x[r*cols+j])
		}
		for j := range cols {
			p := math.Exp(x[r*cols+j]) / s
			if log {
				p = math.Log(p)
			}
			y[r*cols+j] = p
		}
	}
	return y
}

var nslSizes = []int{1, 2, 3, 7, 16}

func TestSoftmaxKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, rows := range nslSizes {
		for _, cols := range nslSizes {
			for _, log := range []bool{false, true} {
				n := rows * cols
				x := nslRand(rng, n, -4, 4)
				dy := nslRand(rng, n, -1, 1)
				want := nslSoftmaxRef(x, rows, cols, log)
				wantDx := nslNumGrad(func(x []float64) float64 { return nslDot(dy, nslSoftmaxRef(x, rows, cols, log)) }, x)

				y64 := make([]float64, n)
				Softmax(y64, x, rows, cols, log)
				nslClose(t, "softmax f64", y64, want, 1e-12)
				dx64 := make([]float64, n)
				SoftmaxGrad(dx64, dy, y64, rows, cols, log)
				nslClose(t, "softmax grad f64", dx64, wantDx, 1e-7)

				y32 := make([]float32, n)
				Softmax(y32, nslConv[float32](x), rows, cols, log)
				nslClose(t, "softmax f32", nslBack(y32), want, 1e-6)
				dx32 := make([]float32, n)
				SoftmaxGrad(dx32, nslConv[float32](dy), y32, rows, cols, log)
				nslClose(t, "softmax grad f32", nslBack(dx32), wantDx, 1e-5)
			}
		}
	}
}

// TestSoftmaxStable checks that huge logits give the softmax of the
// shifted logits (a naive exp would overflow to Inf and give NaN).
func TestSoftmaxStable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rows, cols := 3, 5
	x := nslRand(rng, rows*cols, -3, 3)
	for _, log := range []bool{false, true} {
		want := nslSoftmaxRef(x, rows, cols, log)
		big := make([]float64, len(x))
		for i := range x {
			big[i] = x[i] + 1000
		}
		got := make([]float64, len(x))
		Softmax(got, big, rows, cols, log)
		nslClose(t, "softmax(x+1000)", got, want, 1e-12)
		big32 := nslConv[float32](big)
		for i := range big32 {
			big32[i] += 80 // e^1080 overflows float32 and float64 alike
		}
		got32 := make([]float32, len(x))
		Softmax(got32, big32, rows, cols, log)
		nslClose(t, "softmax f32(x+1080)", nslBack(got32), want, 1e-3)
	}
}

// TestSoftmaxF32Large checks float32 softmax, log-softmax and their
// gradients on a call large enough to be split across the workers (and
// rows longer than the 256-element stack chunks) against the float64
// kernel on the same inputs. Logits span [−8, 8], so x − max reaches −16
// and its float32 rounding costs up to 16·2⁻²⁴ relative in a
// probability: tolerance 2·10⁻⁶·(1+|want|).
func TestSoftmaxF32Large(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	rows, cols := 700, 257
	n := rows * cols
	x := nslRand(rng, n, -8, 8)
	dy := nslRand(rng, n, -1, 1)
	for _, log := range []bool{false, true} {
		want := make([]float64, n)
		Softmax(want, x, rows, cols, log)
		wantDx := make([]float64, n)
		SoftmaxGrad(wantDx, dy, want, rows, cols, log)

		y := make([]float32, n)
		Softmax(y, nslConv[float32](x), rows, cols, log)
		nslClose(t, fmt.Sprintf("softmax f32 (log %v)", log), nslBack(y), want, 2e-6)
		dx := make([]float32, n)
		SoftmaxGrad(dx, nslConv[float32](dy), y, rows, cols, log)
		nslClose(t, fmt.Sprintf("softmax grad f32 (log %v)", log), nslBack(dx), wantDx, 2e-6)

		// In place: dst is src, dx is dy.
		yy := nslConv[float32](x)
		Softmax(yy, yy, rows, cols, log)
		nslClose(t, fmt.Sprintf("softmax f32 in place (log %v)", log), nslBack(yy), nslBack(y), 0)
		gg := nslConv[float32](dy)
		SoftmaxGrad(gg, gg, y, rows, cols, log)
		nslClose(t, fmt.Sprintf("softmax grad f32 in place (log %v)", log), nslBack(gg), nslBack(dx), 0)
	}
}
