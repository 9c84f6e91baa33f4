package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// nslLayerNormRef is layer norm by the definition, in float64.
func nslLayerNormRef(x, w, b []float64, rows, cols int, eps float64) (y, mean, rstd []float64) {
	y = make([]float64, len(x))
	mean, rstd = make([]float64, rows), make([]float64, rows)
	for r := range rows {
		var s float64
		for j := range cols {
			s += x[r*cols+j]
		}
		mu := s / float64(cols)
		var v float64
		for j := range cols {
			v += (x[r*cols+j] - mu) * (x[r*cols+j] - mu)
		}
		v /= float64(cols)
		mean[r], rstd[r] = mu, 1/math.Sqrt(v+eps)
		for j := range cols {
			o := (x[r*cols+j] - mu) / math.Sqrt(v+eps)
			if w != nil {
				o *= w[j]
			}
			if b != nil {
				o += b[j]
			}
			y[r*cols+j] = o
		}
	}
	return y, mean, rstd
}

func TestLayerNormKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const eps = 1e-5
	for _, rows := range nslSizes {
		for _, cols := range nslSizes {
			for _, affine := range []bool{false, true} {
				n := rows * cols
				x := nslRand(rng, n, -2, 3)
				dy := nslRand(rng, n, -1, 1)
				var w, b []float64
				if affine {
					w, b = nslRand(rng, cols, 0.5, 1.5), nslRand(rng, cols, -1, 1)
				}
				wantY, wantM, wantR := nslLayerNormRef(x, w, b, rows, cols, eps)
				loss := func(x, w, b []float64) float64 {
					y, _, _ := nslLayerNormRef(x, w, b, rows, cols, eps)
					return nslDot(dy, y)
				}
				wantDx := nslNumGrad(func(v []float64) float64 { return loss(v, w, b) }, x)
				var wantDw, wantDb []float64
				if affine {
					wantDw = nslNumGrad(func(v []float64) float64 { return loss(x, v, b) }, w)
					wantDb = nslNumGrad(func(v []float64) float64 { return loss(x, w, v) }, b)
				}
				checkLN(t, x, w, b, dy, rows, cols, eps, wantY, wantM, wantR, wantDx, wantDw, wantDb, func(v []float64) []float64 { return append([]float64(nil), v...) }, 1e-6)
				checkLN(t, x, w, b, dy, rows, cols, eps, wantY, wantM, wantR, wantDx, wantDw, wantDb, func(v []float64) []float32 { return nslConv[float32](v) }, 2e-4)
			}
		}
	}
}

func checkLN[T Float](t *testing.T, x, w, b, dy []float64, rows, cols int, eps float64, wantY, wantM, wantR, wantDx, wantDw, wantDb []float64, conv func([]float64) []T, tol float64) {
	t.Helper()
	n := rows * cols
	var wt, bt, dw, db []T
	if w != nil {
		wt, bt = conv(w), conv(b)
		dw, db = make([]T, cols), make([]T, cols)
	}
	y := make([]T, n)
	mean, rstd := make([]T, rows), make([]T, rows)
	LayerNorm(y, conv(x), wt, bt, mean, rstd, rows, cols, eps)
	nslClose(t, "layernorm y", nslBack(y), wantY, tol)
	nslClose(t, "layernorm mean", nslBack(mean), wantM, tol)
	nslClose(t, "layernorm rstd", nslBack(rstd), wantR, tol)
	dx := make([]T, n)
	LayerNormGrad(dx, dw, db, conv(dy), conv(x), wt, mean, rstd, rows, cols)
	nslClose(t, "layernorm dx", nslBack(dx), wantDx, tol)
	if w != nil {
		nslClose(t, "layernorm dw", nslBack(dw), wantDw, tol)
		nslClose(t, "layernorm db", nslBack(db), wantDb, tol)
	}
	// Only dw wanted: dx and db untouched (nil).
	if w != nil {
		dw2 := make([]T, cols)
		LayerNormGrad(nil, dw2, nil, conv(dy), conv(x), wt, mean, rstd, rows, cols)
		nslClose(t, "layernorm dw alone", nslBack(dw2), nslBack(dw), 0)
	}
}

// nslBatchNormRef is batch norm by the definition, in float64: the output
// and, in training, the new running statistics.
func nslBatchNormRef(x, w, b, rm, rv []float64, n, c, hw int, training bool, momentum, eps float64) (y, nm, nv []float64) {
	y = make([]float64, len(x))
	nm, nv = append([]float64(nil), rm...), append([]float64(nil), rv...)
	m := float64(n * hw)
	for ch := range c {
		var mu, v float64
		if training {
			for i := range n {
				for j := range hw {
					mu += x[(i*c+ch)*hw+j]
				}
			}
			mu /= m
			for i := range n {
				for j := range hw {
					v += (x[(i*c+ch)*hw+j] - mu) * (x[(i*c+ch)*hw+j] - mu)
				}
			}
			nm[ch] = (1-momentum)*rm[ch] + momentum*mu
			nv[ch] = (1-momentum)*rv[ch] + momentum*v/(m-1)
			v /= m
		} else {
			mu, v = rm[ch], rv[ch]
		}
		for i := range n {
			for j := range hw {
				o := (x[(i*c+ch)*hw+j] - mu) / math.Sqrt(v+eps)
				if w != nil {
					o = o*w[ch] + b[ch]
				}
				y[(i*c+ch)*hw+j] = o
			}
		}
	}
	return y, nm, nv
}

func TestBatchNormKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const eps, mom = 1e-5, 0.1
	shapes := [][3]int{{2, 1, 1}, {1, 3, 2}, {3, 2, 5}, {4, 3, 1}, {2, 5, 7}}
	for _, sh := range shapes {
		n, c, hw := sh[0], sh[1], sh[2]
		for _, training := range []bool{true, false} {
			for _, affine := range []bool{false, true} {
				sz := n * c * hw
				x := nslRand(rng, sz, -2, 3)
				dy := nslRand(rng, sz, -1, 1)
				rm, rv := nslRand(rng, c, -0.5, 0.5), nslRand(rng, c, 0.5, 2)
				var w, b []float64
				if affine {
					w, b = nslRand(rng, c, 0.5, 1.5), nslRand(rng, c, -1, 1)
				}
				wantY, wantRM, wantRV := nslBatchNormRef(x, w, b, rm, rv, n, c, hw, training, mom, eps)
				loss := func(x, w, b []float64) float64 {
					y, _, _ := nslBatchNormRef(x, w, b, rm, rv, n, c, hw, training, mom, eps)
					return nslDot(dy, y)
				}
				wantDx := nslNumGrad(func(v []float64) float64 { return loss(v, w, b) }, x)
				var wantDw, wantDb []float64
				if affine {
					wantDw = nslNumGrad(func(v []float64) float64 { return loss(x, v, b) }, w)
					wantDb = nslNumGrad(func(v []float64) float64 { return loss(x, w, v) }, b)
				}
				ref := bnWant{wantY, wantRM, wantRV, wantDx, wantDw, wantDb}
				checkBN(t, x, w, b, rm, rv, dy, n, c, hw, training, ref, func(v []float64) []float64 { return append([]float64(nil), v...) }, 1e-6)
				checkBN(t, x, w, b, rm, rv, dy, n, c, hw, training, ref, func(v []float64) []float32 { return nslConv[float32](v) }, 2e-4)
			}
		}
	}
}

type bnWant struct{ y, rm, rv, dx, dw, db []float64 }

func checkBN[T Float](t *testing.T, x, w, b, rm, rv, dy []float64, n, c, hw int, training bool, want bnWant, conv func([]float64) []T, tol float64) {
	t.Helper()
	const eps, mom = 1e-5, 0.1
	var wt, bt, dw, db []T
	if w != nil {
		wt, bt = conv(w), conv(b)
		dw, db = make([]T, c), make([]T, c)
	}
	y := make([]T, len(x))
	mean, invstd := make([]T, c), make([]T, c)
	rmt, rvt := conv(rm), conv(rv)
	BatchNorm(y, conv(x), wt, bt, rmt, rvt, mean, invstd, n, c, hw, training, mom, eps)
	nslClose(t, "batchnorm y", nslBack(y), want.y, tol)
	nslClose(t, "batchnorm running mean", nslBack(rmt), want.rm, tol)
	nslClose(t, "batchnorm running var", nslBack(rvt), want.rv, tol)
	dx := make([]T, len(x))
	BatchNormGrad(dx, dw, db, conv(dy), conv(x), wt, mean, invstd, n, c, hw, training)
	nslClose(t, "batchnorm dx", nslBack(dx), want.dx, tol)
	if w != nil {
		nslClose(t, "batchnorm dw", nslBack(dw), want.dw, tol)
		nslClose(t, "batchnorm db", nslBack(db), want.db, tol)
	}
	if !training {
		// Eval needs x only for dw.
		dx2 := make([]T, len(x))
		BatchNormGrad(dx2, nil, nil, conv(dy), nil, wt, mean, invstd, n, c, hw, false)
		nslClose(t, "batchnorm eval dx without x", nslBack(dx2), nslBack(dx), 0)
	}
}

// TestBatchNormNoRunning checks training without running statistics.
func TestBatchNormNoRunning(t *testing.T) {
	x := []float64{1, 2, 3, 5}
	y := make([]float64, 4)
	mean, invstd := make([]float64, 1), make([]float64, 1)
	BatchNorm(y, x, nil, nil, nil, nil, mean, invstd, 4, 1, 1, true, 0.1, 0)
	want := []float64{-1.1832159566199232, -0.50709255283711, 0.1690308509457033, 1.52127765851133}
	nslClose(t, "batchnorm y", y, want, 1e-12)
	if mean[0] != 2.75 {
		t.Errorf("mean = %v, want 2.75", mean[0])
	}
}

// TestNormPaths checks batch norm and layer norm on shapes whose runs are
// long enough for the assembly loops (8 and 16 elements at a time, with
// tails), with a mean far from zero, against the float64 reference and
// numerical gradients; then that the float32 results are the same bits
// with the assembly turned off, and with every call split across the
// workers.
func TestNormPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const eps, mom = 1e-5, 0.1
	for _, sh := range [][3]int{{3, 4, 37}, {2, 3, 64}, {5, 2, 16}, {1, 3, 9}, {64, 3, 1}} {
		n, c, hw := sh[0], sh[1], sh[2]
		sz := n * c * hw
		x := nslRand(rng, sz, 98, 103)
		dy := nslRand(rng, sz, -1, 1)
		rm, rv := nslRand(rng, c, -0.5, 0.5), nslRand(rng, c, 0.5, 2)
		w, b := nslRand(rng, c, 0.5, 1.5), nslRand(rng, c, -1, 1)
		for _, training := range []bool{true, false} {
			wantY, wantRM, wantRV := nslBatchNormRef(x, w, b, rm, rv, n, c, hw, training, mom, eps)
			loss := func(x, w, b []float64) float64 {
				y, _, _ := nslBatchNormRef(x, w, b, rm, rv, n, c, hw, training, mom, eps)
				return nslDot(dy, y)
			}
			ref := bnWant{wantY, wantRM, wantRV,
				nslNumGrad(func(v []float64) float64 { return loss(v, w, b) }, x),
				nslNumGrad(func(v []float64) float64 { return loss(x, v, b) }, w),
				nslNumGrad(func(v []float64) float64 { return loss(x, w, v) }, b)}
			checkBN(t, x, w, b, rm, rv, dy, n, c, hw, training, ref, func(v []float64) []float64 { return append([]float64(nil), v...) }, 1e-6)
			checkBN(t, x, w, b, rm, rv, dy, n, c, hw, training, ref, func(v []float64) []float32 { return nslConv[float32](v) }, 2e-4)
			bnBits := func() [][]float32 {
				x32, dy32, w32, b32 := nslConv[float32](x), nslConv[float32](dy), nslConv[float32](w), nslConv[float32](b)
				rm32, rv32 := nslConv[float32](rm), nslConv[float32](rv)
				y, dx := make([]float32, sz), make([]float32, sz)
				mean, is, dw, db := make([]float32, c), make([]float32, c), make([]float32, c), make([]float32, c)
				BatchNorm(y, x32, w32, b32, rm32, rv32, mean, is, n, c, hw, training, mom, eps)
				BatchNormGrad(dx, dw, db, dy32, x32, w32, mean, is, n, c, hw, training)
				return [][]float32{y, rm32, rv32, mean, is, dx, dw, db}
			}
			sameBits(t, fmt.Sprintf("batchnorm %v training=%v", sh, training), bnBits)
		}
	}
	for _, sh := range [][2]int{{5, 37}, {3, 64}, {40, 16}, {2, 100}} {
		rows, cols := sh[0], sh[1]
		x := nslRand(rng, rows*cols, 98, 103)
		dy := nslRand(rng, rows*cols, -1, 1)
		w, b := nslRand(rng, cols, 0.5, 1.5), nslRand(rng, cols, -1, 1)
		wantY, wantM, wantR := nslLayerNormRef(x, w, b, rows, cols, eps)
		loss := func(x, w, b []float64) float64 {
			y, _, _ := nslLayerNormRef(x, w, b, rows, cols, eps)
			return nslDot(dy, y)
		}
		wantDx := nslNumGrad(func(v []float64) float64 { return loss(v, w, b) }, x)
		wantDw := nslNumGrad(func(v []float64) float64 { return loss(x, v, b) }, w)
		wantDb := nslNumGrad(func(v []float64) float64 { return loss(x, w, v) }, b)
		checkLN(t, x, w, b, dy, rows, cols, eps, wantY, wantM, wantR, wantDx, wantDw, wantDb, func(v []float64) []float64 { return append([]float64(nil), v...) }, 1e-6)
		checkLN(t, x, w, b, dy, rows, cols, eps, wantY, wantM, wantR, wantDx, wantDw, wantDb, func(v []float64) []float32 { return nslConv[float32](v) }, 2e-4)
		sameBits(t, fmt.Sprintf("layernorm %v", sh), func() [][]float32 {
			x32, dy32, w32, b32 := nslConv[float32](x), nslConv[float32](dy), nslConv[float32](w), nslConv[float32](b)
			y, dx := make([]float32, rows*cols), make([]float32, rows*cols)
			mean, rstd, dw, db := make([]float32, rows), make([]float32, rows), make([]float32, cols), make([]float32, cols)
			LayerNorm(y, x32, w32, b32, mean, rstd, rows, cols, eps)
			LayerNormGrad(dx, dw, db, dy32, x32, w32, mean, rstd, rows, cols)
			return [][]float32{y, mean, rstd, dx, dw, db}
		})
	}
}

// sameBits runs f as it is, with the assembly turned off, and with every
// norm and pooling call split across the workers, and reports any output
// whose bits differ.
func sameBits(t *testing.T, name string, f func() [][]float32) {
	t.Helper()
	want := f()
	var noAsm, split [][]float32
	withoutAsm(func() { noAsm = f() })
	func() {
		defer func(v int) { normParallelMin = v }(normParallelMin)
		normParallelMin = 1
		split = f()
	}()
	for _, got := range []struct {
		how string
		v   [][]float32
	}{{"without assembly", noAsm}, {"split across workers", split}} {
		for i := range want {
			for j := range want[i] {
				if math.Float32bits(got.v[i][j]) != math.Float32bits(want[i][j]) {
					t.Errorf("%s %s: output %d[%d] = %v, want %v", name, got.how, i, j, got.v[i][j], want[i][j])
					break
				}
			}
		}
	}
}
