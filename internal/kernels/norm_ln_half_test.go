package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestLayerNormGradHalf: LayerNormGradHalf on bfloat16 and float16 dy, x
// (and dx) gives bit for bit what LayerNormGrad gives on the operands
// widened to float32 (dx narrowed after), on every conversion path of this
// machine, split across the workers or not: rows of 1 to 300 elements
// (tails under 16, a single element), with and without w, dx, dw and db.
func TestLayerNormGradHalf(t *testing.T) {
	saved, paths, savedMin := CPU, optimPaths(), normParallelMin
	defer func() { CPU, normParallelMin = saved, savedMin }()
	r := rand.New(rand.NewPCG(11, 3))
	for _, bf16 := range []bool{true, false} {
		for _, sh := range [][2]int{{1, 1}, {3, 7}, {5, 15}, {40, 16}, {9, 17}, {64, 33}, {33, 300}} {
			rows, cols := sh[0], sh[1]
			n := rows * cols
			dy, x := make([]uint16, n), make([]uint16, n)
			for i := range dy {
				dy[i] = halfOf(bf16, float32(r.NormFloat64()))
				x[i] = halfOf(bf16, float32(r.NormFloat64()*3+1))
			}
			w, mean, rstd := randF32(r, cols), randF32(r, rows), randF32(r, rows)
			for _, variant := range []struct{ dx, dw, db, w bool }{{true, true, true, true}, {true, false, false, false}, {false, true, false, true}, {true, false, true, false}} {
				for _, split := range []int{savedMin, 1} {
					normParallelMin = split
					want := lnGradWidened(bf16, dy, x, pick(variant.w, w), mean, rstd, rows, cols, variant.dx, variant.dw, variant.db)
					for _, p := range paths {
						CPU = p.f
						got := lnGradHalfOut(bf16, dy, x, pick(variant.w, w), mean, rstd, rows, cols, variant.dx, variant.dw, variant.db)
						CPU = saved
						for o := range want {
							for i := range want[o] {
								if math.Float32bits(got[o][i]) != math.Float32bits(want[o][i]) {
									t.Fatalf("%s bf16=%v %dx%d %+v split %d: output %d [%d] = %v, want %v",
										p.name, bf16, rows, cols, variant, split, o, i, got[o][i], want[o][i])
								}
							}
						}
					}
				}
			}
		}
	}
}

// randF32 returns n normal float32 values.
func randF32(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// pick returns v when on, else nil.
func pick(on bool, v []float32) []float32 {
	if on {
		return v
	}
	return nil
}

// lnOuts makes the wanted outputs of a layer norm gradient (nil when not).
func lnOuts(n, cols int, dx, dw, db bool) (ox, ow, ob []float32) {
	return pick(dx, make([]float32, n)), pick(dw, make([]float32, cols)), pick(db, make([]float32, cols))
}

// lnGradWidened is the reference: dy and x widened, LayerNormGrad, dx
// narrowed and widened again; it returns dx, dw, db.
func lnGradWidened(bf16 bool, dy, x []uint16, w, mean, rstd []float32, rows, cols int, wantDx, wantDw, wantDb bool) [3][]float32 {
	wide := func(h []uint16) []float32 {
		v := make([]float32, len(h))
		if bf16 {
			dtype.BF16ToF32s(v, h)
		} else {
			dtype.F16ToF32s(v, h)
		}
		return v
	}
	ox, ow, ob := lnOuts(rows*cols, cols, wantDx, wantDw, wantDb)
	LayerNormGrad(ox, ow, ob, wide(dy), wide(x), w, mean, rstd, rows, cols)
	for i, v := range ox {
		ox[i] = wide([]uint16{halfOf(bf16, v)})[0]
	}
	return [3][]float32{ox, ow, ob}
}

// lnGradHalfOut runs LayerNormGradHalf and returns dx (widened), dw, db.
func lnGradHalfOut(bf16 bool, dy, x []uint16, w, mean, rstd []float32, rows, cols int, wantDx, wantDw, wantDb bool) [3][]float32 {
	_, ow, ob := lnOuts(0, cols, false, wantDw, wantDb)
	var hx []uint16
	if wantDx {
		hx = make([]uint16, rows*cols)
	}
	LayerNormGradHalf(hx, dy, x, bf16, ow, ob, w, mean, rstd, rows, cols)
	var ox []float32
	if wantDx {
		ox = make([]float32, len(hx))
		if bf16 {
			dtype.BF16ToF32s(ox, hx)
		} else {
			dtype.F16ToF32s(ox, hx)
		}
	}
	return [3][]float32{ox, ow, ob}
}
