package kernels

import (
	"sync/atomic"
	"testing"
)

func TestParallelForCoversRangeOnce(t *testing.T) {
	for _, n := range []int{0, 1, 7, 100, 1001} {
		for _, grain := range []int{1, 3, 64, 5000} {
			hits := make([]int32, n)
			ParallelFor(n, grain, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					atomic.AddInt32(&hits[i], 1)
				}
			})
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("n=%d grain=%d: index %d visited %d times", n, grain, i, h)
				}
			}
		}
	}
}

func TestParallelForNestedAndConcurrent(t *testing.T) {
	var total atomic.Int64
	done := make(chan bool)
	for range 4 {
		go func() {
			for range 50 {
				ParallelFor(8, 1, func(lo, hi int) {
					for range hi - lo {
						ParallelFor(16, 1, func(lo, hi int) { total.Add(int64(hi - lo)) })
					}
				})
			}
			done <- true
		}()
	}
	for range 4 {
		<-done
	}
	if got, want := total.Load(), int64(4*50*8*16); got != want {
		t.Fatalf("total = %d, want %d", got, want)
	}
}
