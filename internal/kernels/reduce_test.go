package kernels

import (
	"math/rand/v2"
	"testing"
)

// TestReduceColumnSum checks sums and means over outer axes — the path
// that adds contiguous kept blocks row after row — bit for bit against the
// sequential float64 sum of each output, on contiguous and transposed
// inputs, with kept blocks below and above columnSumMin.
func TestReduceColumnSum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 8))
	for _, c := range []struct {
		shape, dshape []int
		strides       []int // nil: contiguous
		exact         bool  // false: the general path may sum a contiguous run in another order
	}{
		{[]int{4, 50, 37}, []int{1, 1, 37}, nil, true},
		{[]int{200, 130}, []int{1, 130}, nil, true},
		{[]int{3, 5, 7, 16}, []int{3, 1, 1, 16}, nil, true}, // kept not one block: the general path
		{[]int{3, 5, 7, 16}, []int{1, 1, 7, 16}, nil, true}, // kept (7, 16) one block
		{[]int{64, 9}, []int{1, 9}, nil, true},              // below columnSumMin
		{[]int{40, 32}, []int{1, 32}, []int{1, 40}, false},  // a transposed input: the general path
		{[]int{6, 40, 32}, []int{1, 1, 32}, []int{1280, 1, 40}, false},
	} {
		n := 1
		for _, s := range c.shape {
			n *= s
		}
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(r.NormFloat64() * 100)
		}
		sl := Layout{Shape: c.shape, Strides: c.strides}
		st := stridesOf(sl)
		for _, op := range []int{RSum, RMean} {
			outN := 1
			for _, s := range c.dshape {
				outN *= s
			}
			got := make([]float64, outN)
			Reduce(op, 0, c.dshape, src, sl, func(i int, v float64) { got[i] = v })
			// Reference: for every output index, the sequential float64 sum
			// over the reduced positions in row-major order.
			want := make([]float64, outN)
			counts := make([]int, outN)
			idx := make([]int, len(c.shape))
			for range n {
				off, out := 0, 0
				for d := range c.shape {
					off += idx[d] * st[d]
					if c.dshape[d] != 1 {
						out = out*c.dshape[d] + idx[d]
					}
				}
				want[out] += float64(src[off])
				counts[out]++
				for d := len(idx) - 1; d >= 0; d-- {
					if idx[d]++; idx[d] < c.shape[d] {
						break
					}
					idx[d] = 0
				}
			}
			for i := range want {
				if op == RMean {
					want[i] /= float64(counts[i])
				}
				if d := got[i] - want[i]; c.exact && d != 0 || d*d > 1e-18*want[i]*want[i]+1e-20 {
					t.Fatalf("%v → %v (strides %v), op %d: out[%d] = %v, want %v", c.shape, c.dshape, c.strides, op, i, got[i], want[i])
				}
			}
		}
	}
}
