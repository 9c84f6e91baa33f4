package kernels

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/internal/cputime"
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

// An idle pool stops spinning: after a parallel call the workers and the
// caller poll for at most poolSpin each, then park, so a process that
// waits burns (almost) no processor time — far below the 100 ms it would
// burn per core if a worker never parked.
func TestIdlePoolParks(t *testing.T) {
	var sum atomic.Int64
	for range 20 {
		ParallelFor(4*Workers(), 1, func(lo, hi int) { sum.Add(int64(hi - lo)) })
	}
	time.Sleep(10 * poolSpin) // let every spin run out
	c0 := cputime.Process()
	time.Sleep(100 * time.Millisecond)
	if used := cputime.Process() - c0; used > 20*time.Millisecond {
		t.Fatalf("%d workers, idle for 100 ms after ParallelFor, used %v of processor time; want < 20ms (spin ≤ %v)",
			Workers(), used, poolSpin)
	}
	if sum.Load() != int64(20*4*Workers()) {
		t.Fatalf("covered %d items, want %d", sum.Load(), 20*4*Workers())
	}
}
