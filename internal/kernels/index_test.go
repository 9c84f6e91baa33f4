package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// idxCoords returns the row-major coordinates of flat element e of shape.
func idxCoords(e int, shape []int) []int {
	c := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		c[d] = e % shape[d]
		e /= shape[d]
	}
	return c
}

// idxFlat returns the row-major position of coordinates c in shape.
func idxFlat(c, shape []int) int {
	p := 0
	for d := range shape {
		p = p*shape[d] + c[d]
	}
	return p
}

// idxSplit returns (outer, n, inner) of shape around dim.
func idxSplit(shape []int, dim int) (outer, n, inner int) {
	outer, inner = 1, 1
	for _, s := range shape[:dim] {
		outer *= s
	}
	for _, s := range shape[dim+1:] {
		inner *= s
	}
	return outer, shape[dim], inner
}

func idxRandShape(rng *rand.Rand) []int {
	shape := make([]int, 1+rng.IntN(4))
	for i := range shape {
		shape[i] = 1 + rng.IntN(5) // size-1 and odd sizes included
	}
	return shape
}

func idxRandF64(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

func numelOf(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

func TestIndexSelectAndAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 60 {
		shape := idxRandShape(rng)
		dim := rng.IntN(len(shape))
		m := 1 + rng.IntN(6) // repeats likely
		idx := make([]int64, m)
		for j := range idx {
			idx[j] = int64(rng.IntN(shape[dim]))
		}
		oshape := append([]int(nil), shape...)
		oshape[dim] = m
		src := idxRandF64(rng, numelOf(shape))
		dy := idxRandF64(rng, numelOf(oshape))
		// reference: every output coordinate reads the input at idx along dim;
		// every input coordinate sums the output gradient of all j with idx[j] = it.
		want := make([]float64, len(dy))
		wantDx := make([]float64, len(src))
		for e := range want {
			c := idxCoords(e, oshape)
			c[dim] = int(idx[c[dim]])
			want[e] = src[idxFlat(c, shape)]
			wantDx[idxFlat(c, shape)] += dy[e]
		}
		outer, n, inner := idxSplit(shape, dim)
		name := fmt.Sprintf("%d:%v/dim%d/idx%v", trial, shape, dim, idx)
		got := make([]float64, len(want))
		IndexSelect(got, src, idx, outer, n, inner)
		idxCompare(t, name+"/select", got, want, 0)
		dx := make([]float64, len(src))
		IndexAdd(dx, idx, dy, outer, n, inner)
		idxCompare(t, name+"/add", dx, wantDx, 1e-12)
		dx32 := make([]float32, len(src))
		dy32 := make([]float32, len(dy))
		for i, v := range dy {
			dy32[i] = float32(v)
		}
		IndexAdd(dx32, idx, dy32, outer, n, inner)
		idxCompare32(t, name+"/add32", dx32, wantDx, 1e-5)
	}
}

func TestGatherAndScatterAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for trial := range 60 {
		shape := idxRandShape(rng)
		dim := rng.IntN(len(shape))
		ishape := append([]int(nil), shape...)
		ishape[dim] = 1 + rng.IntN(6)
		src := idxRandF64(rng, numelOf(shape))
		idx := make([]int64, numelOf(ishape))
		for i := range idx {
			idx[i] = int64(rng.IntN(shape[dim]))
		}
		dy := idxRandF64(rng, len(idx))
		want := make([]float64, len(idx))
		wantDx := make([]float64, len(src))
		for e := range want {
			c := idxCoords(e, ishape)
			c[dim] = int(idx[e])
			want[e] = src[idxFlat(c, shape)]
			wantDx[idxFlat(c, shape)] += dy[e]
		}
		outer, n, inner := idxSplit(shape, dim)
		m := ishape[dim]
		name := fmt.Sprintf("%d:%v/dim%d/idx%v", trial, shape, dim, ishape)
		got := make([]float64, len(want))
		Gather(got, src, idx, outer, n, m, inner)
		idxCompare(t, name+"/gather", got, want, 0)
		dx := make([]float64, len(src))
		ScatterAdd(dx, idx, dy, outer, n, m, inner)
		idxCompare(t, name+"/scatter_add", dx, wantDx, 1e-12)
	}
}

func TestIndexOutOfRangePanics(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"index_select", func() { IndexSelect(make([]float32, 6), make([]float32, 6), []int64{0, 3}, 1, 3, 2) }},
		{"index_add", func() { IndexAdd(make([]float32, 6), []int64{-1}, make([]float32, 2), 1, 3, 2) }},
		{"gather", func() { Gather(make([]int32, 2), make([]int32, 6), []int64{0, 3}, 1, 3, 1, 2) }},
		{"scatter_add", func() { ScatterAdd(make([]float64, 6), []int64{5, 0}, make([]float64, 2), 1, 3, 1, 2) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with an index out of range did not panic", c.name)
				}
			}()
			c.f()
		}()
	}
}

func idxCompare(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	for i := range want {
		if d := got[i] - want[i]; d > tol || d < -tol {
			t.Fatalf("%s: element %d = %g, want %g", name, i, got[i], want[i])
		}
	}
}

func idxCompare32(t *testing.T, name string, got []float32, want []float64, tol float64) {
	t.Helper()
	for i := range want {
		if d := float64(got[i]) - want[i]; d > tol || d < -tol {
			t.Fatalf("%s: element %d = %g, want %g", name, i, got[i], want[i])
		}
	}
}
