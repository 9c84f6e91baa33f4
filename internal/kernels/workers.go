package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// The worker pool: persistent goroutines that split loops across cores, so
// a kernel call neither starts goroutines nor allocates in steady state.
// A caller waiting for its ranges runs queued ranges itself, so nested
// ParallelFor calls (a kernel called from inside another's range) cannot
// deadlock.

type group struct {
	pending atomic.Int32
	done    chan struct{} // receives once when pending reaches zero
}

type task struct {
	f      func(lo, hi int)
	lo, hi int
	g      *group
}

func (t task) run() {
	t.f(t.lo, t.hi)
	if t.g.pending.Add(-1) == 0 {
		t.g.done <- struct{}{}
	}
}

var (
	poolOnce sync.Once
	tasks    chan task
	workers  int
	// groups holds the wait groups of finished calls: a freeList, not a
	// sync.Pool, whose garbage collections (and, under the race detector,
	// random drops) would remake one now and then, so a warm kernel call
	// would allocate.
	groups freeList[group]
)

func startPool() {
	workers = runtime.GOMAXPROCS(0)
	tasks = make(chan task, 8*workers)
	for range workers - 1 {
		go func() {
			for t := range tasks {
				t.run()
			}
		}()
	}
}

// Workers returns the number of goroutines ParallelFor uses (GOMAXPROCS at
// first use).
func Workers() int {
	poolOnce.Do(startPool)
	return workers
}

// ParallelFor calls f over [0, n) cut into contiguous ranges of at least
// grain items, at most one per worker, and returns when all are done. The
// calling goroutine runs the first range. Small loops run inline.
func ParallelFor(n, grain int, f func(lo, hi int)) {
	w := Workers()
	grain = max(grain, 1)
	parts := min(w, n/grain)
	if parts <= 1 {
		f(0, n)
		return
	}
	per := (n + parts - 1) / parts
	parts = (n + per - 1) / per
	g := groups.get()
	if g.done == nil {
		g.done = make(chan struct{}, 1)
	}
	g.pending.Store(int32(parts))
	for lo := per; lo < n; lo += per {
		t := task{f: f, lo: lo, hi: min(lo+per, n), g: g}
		select {
		case tasks <- t:
		default:
			t.run() // queue full: do it here
		}
	}
	task{f: f, lo: 0, hi: per, g: g}.run()
	for {
		select {
		case t := <-tasks:
			t.run()
		case <-g.done:
			groups.put(g)
			return
		}
	}
}
