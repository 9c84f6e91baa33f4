package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestReduceColumnsHalf: sums and means over outer axes of bfloat16 and
// float16 inputs, read as 16-bit, give bit for bit what Reduce gives on the
// input widened to float32, on every conversion path of this machine; kept
// blocks of 16 to 1,100 elements (tails of a 512 chunk, odd lengths), an
// offset view and random patterns (Inf and NaN included: any NaN matches
// a NaN). Reductions it
// does not take (a kept block under columnSumMin, a transposed input, max)
// report false.
func TestReduceColumnsHalf(t *testing.T) {
	saved, paths := CPU, optimPaths()
	defer func() { CPU = saved }()
	r := rand.New(rand.NewPCG(5, 9))
	cases := []struct {
		shape, dshape []int
		off           int
	}{
		{[]int{4, 50, 37}, []int{1, 1, 37}, 0},
		{[]int{3, 1100}, []int{1, 1100}, 3},
		{[]int{2, 5, 7, 16}, []int{1, 1, 7, 16}, 1},
		{[]int{9, 513}, []int{1, 513}, 0},
		{[]int{2, 16}, []int{1, 16}, 0},
	}
	for _, bf16 := range []bool{true, false} {
		for _, c := range cases {
			n := c.off + numelOf(c.shape)
			src := make([]uint16, n)
			for i := range src {
				src[i] = uint16(r.Uint32())
				if i%7 != 0 { // mostly finite values of moderate size
					src[i] = halfOf(bf16, float32(r.NormFloat64()*50))
				}
			}
			wide := make([]float32, n)
			if bf16 {
				dtype.BF16ToF32s(wide, src)
			} else {
				dtype.F16ToF32s(wide, src)
			}
			sl := Layout{Off: c.off, Shape: c.shape}
			outN := numelOf(c.dshape)
			for _, op := range []int{RSum, RMean} {
				want := make([]float64, outN)
				Reduce(op, 0, c.dshape, wide, sl, func(i int, v float64) { want[i] = v })
				for _, p := range paths {
					CPU = p.f
					got := make([]float64, outN)
					if !ReduceColumnsHalf(op, c.dshape, src, bf16, sl, func(i int, v float64) { got[i] = v }) {
						t.Fatalf("%s bf16=%v %v → %v: not taken", p.name, bf16, c.shape, c.dshape)
					}
					for i := range want {
						// Bit for bit; a NaN's payload depends on the operand
						// order the compiler gives each addition.
						if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
							t.Fatalf("%s bf16=%v %v → %v op %d: out[%d] = %v, want %v", p.name, bf16, c.shape, c.dshape, op, i, got[i], want[i])
						}
					}
					CPU = saved
				}
			}
		}
	}
	src := make([]uint16, 64*9)
	for _, c := range []struct {
		op     int
		sl     Layout
		dshape []int
	}{
		{RSum, Layout{Shape: []int{64, 9}}, []int{1, 9}},
		{RSum, Layout{Shape: []int{9, 64}, Strides: []int{1, 9}}, []int{1, 64}},
		{RMax, Layout{Shape: []int{9, 64}}, []int{1, 64}},
	} {
		if ReduceColumnsHalf(c.op, c.dshape, src, true, c.sl, func(int, float64) {}) {
			t.Errorf("op %d over %v → %v: taken, want false", c.op, c.sl, c.dshape)
		}
	}
}

// halfOf narrows v to bfloat16 (bf16) or float16 bits.
func halfOf(bf16 bool, v float32) uint16 {
	if bf16 {
		return dtype.BF16FromF32(v)
	}
	return dtype.F16FromF32(v)
}
