package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The worker pool: persistent goroutines that split loops across cores, so
// a kernel call neither starts goroutines nor allocates in steady state.
// A caller waiting for its ranges runs queued ranges itself, so nested
// ParallelFor calls (a kernel called from inside another's range) cannot
// deadlock.
//
// Waiting spins before it sleeps, as OpenMP's runtime does: an idle
// worker polls the queue for poolSpin before it parks, and a caller polls
// for its last ranges as long, yielding to other goroutines (the garbage
// collector's among them) as it polls. A training step is thousands of
// parallel calls a few hundred microseconds apart; a parked goroutine
// takes tens of microseconds to wake (a futex on a VM), so without the
// spin one core sat idle at the start and end of every call.

// poolSpin is how long a waiting worker or caller polls before it parks:
// a CPU cost of at most poolSpin per core after each parallel call.
const poolSpin = time.Millisecond

// spinPolls is the polls between clock reads and yields while spinning.
const spinPolls = 32

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
			for {
				nextTask().run()
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
	wait(g)
	groups.put(g)
}

// nextTask returns the next queued task, polling for poolSpin before it
// blocks.
func nextTask() task {
	var until time.Time
	for i := 0; ; i++ {
		select {
		case t := <-tasks:
			return t
		default:
		}
		if i%spinPolls == 0 && spinDone(&until) {
			return <-tasks
		}
	}
}

// wait runs queued tasks (its own ranges or nested calls') until g is
// done, polling for poolSpin before it blocks.
func wait(g *group) {
	var until time.Time
	for i := 0; ; i++ {
		select {
		case t := <-tasks:
			t.run()
			until, i = time.Time{}, 0 // ran one: spin afresh
			continue
		case <-g.done:
			return
		default:
		}
		if i%spinPolls == 0 && spinDone(&until) {
			break
		}
	}
	for {
		select {
		case t := <-tasks:
			t.run()
		case <-g.done:
			return
		}
	}
}

// spinDone starts the spin's clock on its first call (until zero) and
// reports whether poolSpin has passed; otherwise it yields the core to
// any other runnable goroutine.
func spinDone(until *time.Time) bool {
	now := time.Now()
	if until.IsZero() {
		*until = now.Add(poolSpin)
		return false
	}
	if now.After(*until) {
		return true
	}
	runtime.Gosched()
	return false
}
