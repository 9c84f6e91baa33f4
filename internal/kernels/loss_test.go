package kernels

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// nslCERef is cross entropy by the formula: with p = exp(z)/Σexp(z),
// loss = (1-ε)·(-log p_t) + ε·(1/V)·Σ_c -log p_c; ignored rows 0.
func nslCERef(z []float64, tgt []int64, rows, cols int, ignore int64, eps float64) (loss, lse []float64) {
	loss, lse = make([]float64, rows), make([]float64, rows)
	for r := range rows {
		var s float64
		for c := range cols {
			s += math.Exp(z[r*cols+c])
		}
		lse[r] = math.Log(s)
		if tgt[r] == ignore {
			continue
		}
		var smooth float64
		for c := range cols {
			smooth += -math.Log(math.Exp(z[r*cols+c]) / s)
		}
		loss[r] = (1-eps)*-math.Log(math.Exp(z[r*cols+int(tgt[r])])/s) + eps*smooth/float64(cols)
	}
	return loss, lse
}

func TestCrossEntropyKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, rows := range nslSizes {
		for _, cols := range nslSizes {
			for _, eps := range []float64{0, 0.1} {
				for _, ign := range []int64{math.MinInt64, 0, -100} {
					z := nslRand(rng, rows*cols, -4, 4)
					tgt := make([]int64, rows)
					for i := range tgt {
						tgt[i] = int64(rng.IntN(cols))
						if ign == -100 && i%3 == 1 {
							tgt[i] = -100
						}
					}
					dl := nslRand(rng, rows, -1, 1)
					wantL, wantLse := nslCERef(z, tgt, rows, cols, ign, eps)
					wantDz := nslNumGrad(func(v []float64) float64 {
						l, _ := nslCERef(v, tgt, rows, cols, ign, eps)
						return nslDot(dl, l)
					}, z)
					checkCE(t, z, tgt, dl, rows, cols, ign, eps, wantL, wantLse, wantDz, func(v []float64) []float64 { return append([]float64(nil), v...) }, 1e-7)
					checkCE(t, z, tgt, dl, rows, cols, ign, eps, wantL, wantLse, wantDz, func(v []float64) []float32 { return nslConv[float32](v) }, 1e-5)
				}
			}
		}
	}
}

func checkCE[T Float](t *testing.T, z []float64, tgt []int64, dl []float64, rows, cols int, ign int64, eps float64, wantL, wantLse, wantDz []float64, conv func([]float64) []T, tol float64) {
	t.Helper()
	loss, lse := make([]T, rows), make([]T, rows)
	for i := range loss {
		loss[i] = T(math.NaN()) // ignored rows must be written too
	}
	zt := conv(z)
	CrossEntropy(loss, lse, zt, tgt, rows, cols, ign, eps)
	nslClose(t, "cross entropy loss", nslBack(loss), wantL, tol)
	nslClose(t, "cross entropy lse", nslBack(lse), wantLse, tol)
	dz := conv(z) // stale values must be overwritten
	CrossEntropyGrad(dz, conv(dl), zt, lse, tgt, rows, cols, ign, eps)
	nslClose(t, "cross entropy dlogits", nslBack(dz), wantDz, tol)
}

func TestCrossEntropyStable(t *testing.T) {
	z := []float64{1000, 1001, 999, -3, 0, 1}
	tgt := []int64{1, 2}
	wantL, _ := nslCERef([]float64{1, 2, 0, -4, -1, 0}, tgt, 2, 3, math.MinInt64, 0)
	loss, lse := make([]float64, 2), make([]float64, 2)
	CrossEntropy(loss, lse, z, tgt, 2, 3, math.MinInt64, 0)
	nslClose(t, "cross entropy of large logits", loss, wantL, 1e-12)
}

func TestCrossEntropyBadTarget(t *testing.T) {
	for _, bad := range []int64{-1, 3, -100} {
		func() {
			defer func() {
				r := recover()
				if s, ok := r.(string); !ok || !strings.Contains(s, "outside [0, 3)") {
					t.Errorf("target %d: recovered %v, want a panic naming the range", bad, r)
				}
			}()
			loss, lse := make([]float32, 2), make([]float32, 2)
			CrossEntropy(loss, lse, make([]float32, 6), []int64{0, bad}, 2, 3, math.MinInt64, 0)
		}()
	}
}

// TestCrossEntropyF32Large checks float32 cross entropy and its gradient
// on a call large enough to be split across the workers against the
// float64 kernel on the same logits (in [−8, 8]): tolerance 2·10⁻⁶·(1 +
// |want|), as for softmax.
func TestCrossEntropyF32Large(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	rows, cols := 600, 300
	z := nslRand(rng, rows*cols, -8, 8)
	tgt := make([]int64, rows)
	for i := range tgt {
		tgt[i] = int64(rng.IntN(cols))
		if i%7 == 3 {
			tgt[i] = -100
		}
	}
	dl := nslRand(rng, rows, -1, 1)
	for _, eps := range []float64{0, 0.1} {
		l64, lse64 := make([]float64, rows), make([]float64, rows)
		CrossEntropy(l64, lse64, z, tgt, rows, cols, -100, eps)
		dz64 := make([]float64, rows*cols)
		CrossEntropyGrad(dz64, dl, z, lse64, tgt, rows, cols, -100, eps)

		z32 := nslConv[float32](z)
		l32, lse32 := make([]float32, rows), make([]float32, rows)
		CrossEntropy(l32, lse32, z32, tgt, rows, cols, -100, eps)
		nslClose(t, "cross entropy f32 loss", nslBack(l32), l64, 2e-6)
		nslClose(t, "cross entropy f32 lse", nslBack(lse32), lse64, 2e-6)
		dz32 := make([]float32, rows*cols)
		CrossEntropyGrad(dz32, nslConv[float32](dl), z32, lse32, tgt, rows, cols, -100, eps)
		nslClose(t, "cross entropy f32 dlogits", nslBack(dz32), dz64, 2e-6)
	}
}
