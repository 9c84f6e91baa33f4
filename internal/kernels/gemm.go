package kernels

import (
	"runtime"
	"sync"
)

// GemmArgs is C = alpha·op(A)·op(B) + beta·C over Batch row-major matrices
// (see device.Gemm); offsets are in elements.
type GemmArgs struct {
	TransA, TransB   bool
	M, N, K          int
	Alpha, Beta      float64
	OffA, OffB, OffC int
	LdA, LdB, LdC    int
	Batch            int
	StrideA, StrideB int
	StrideC          int
}

// Gemm runs the plain-Go GEMM, splitting rows of C across goroutines for
// large problems.
func Gemm[T Float](g GemmArgs, a, b, c []T) {
	for bi := range max(g.Batch, 1) {
		oa, ob, oc := g.OffA+bi*g.StrideA, g.OffB+bi*g.StrideB, g.OffC+bi*g.StrideC
		work := g.M * g.N * g.K
		workers := 1
		if work >= 1<<18 {
			workers = min(runtime.GOMAXPROCS(0), g.M)
		}
		if workers <= 1 {
			gemmRows(g, a, b, c, oa, ob, oc, 0, g.M)
			continue
		}
		var wg sync.WaitGroup
		per := (g.M + workers - 1) / workers
		for lo := 0; lo < g.M; lo += per {
			hi := min(lo+per, g.M)
			wg.Add(1)
			go func() {
				defer wg.Done()
				gemmRows(g, a, b, c, oa, ob, oc, lo, hi)
			}()
		}
		wg.Wait()
	}
}

// gemmRows computes rows [lo, hi) of one matrix product.
func gemmRows[T Float](g GemmArgs, a, b, c []T, oa, ob, oc, lo, hi int) {
	alpha, beta := T(g.Alpha), T(g.Beta)
	n, k := g.N, g.K
	for i := lo; i < hi; i++ {
		row := c[oc+i*g.LdC : oc+i*g.LdC+n]
		if beta == 0 {
			clear(row)
		} else if beta != 1 {
			for j := range row {
				row[j] *= beta
			}
		}
		switch {
		case !g.TransB:
			for p := range k {
				var av T
				if g.TransA {
					av = a[oa+p*g.LdA+i]
				} else {
					av = a[oa+i*g.LdA+p]
				}
				av *= alpha
				br := b[ob+p*g.LdB : ob+p*g.LdB+n]
				for j, bv := range br {
					row[j] += av * bv
				}
			}
		case !g.TransA:
			ar := a[oa+i*g.LdA : oa+i*g.LdA+k]
			for j := range row {
				br := b[ob+j*g.LdB : ob+j*g.LdB+k]
				var s T
				for p, av := range ar {
					s += av * br[p]
				}
				row[j] += alpha * s
			}
		default:
			for j := range row {
				var s T
				for p := range k {
					s += a[oa+p*g.LdA+i] * b[ob+j*g.LdB+p]
				}
				row[j] += alpha * s
			}
		}
	}
}
