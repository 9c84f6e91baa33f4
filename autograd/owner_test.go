package autograd_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// scopeMisuse reports whether err is the *Error of an op that found the
// scope in use by another goroutine.
func scopeMisuse(err error) bool {
	var e *autograd.Error
	return errors.As(err, &e) && strings.Contains(e.Msg, "in use by another goroutine")
}

// TestScopeUsedByTwoGoroutinesAtOnce: while one goroutine is inside an op
// of a scope (held at its saved-tensor hook, so the overlap is certain),
// an op of a second goroutine on that scope fails with *Error, allocating
// nothing; the first goroutine's step then completes and releases
// everything.
func TestScopeUsedByTwoGoroutinesAtOnce(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	w := autograd.Param(dev, dtype.F32, "w", 4, 4)
	defer w.Release()
	s := autograd.NewScope()
	inside, resume := make(chan struct{}), make(chan struct{})
	first := true
	s.PushSavedHooks(autograd.SavedHooks{
		Pack: func(t *autograd.Tensor) any {
			if first {
				first = false
				close(inside)
				<-resume
			}
			return t
		},
		Unpack: func(p any) *autograd.Tensor { return p.(*autograd.Tensor).Detach() },
		Free:   func(p any) { p.(*autograd.Tensor).Release() },
	})
	done := make(chan error)
	go func() {
		done <- s.Run(func() error {
			x := s.Full(dev, dtype.F32, 1, 2, 4)
			return autograd.Linear(x, w, nil).Sum(false).Backward() // linear saves x: Pack waits
		})
	}()
	<-inside
	held := dev.CurrentBytes()
	err := autograd.Try(func() { s.Zeros(dev, dtype.F32, 8) })
	if !scopeMisuse(err) {
		t.Errorf("an op while another goroutine is inside one: error %v, want the scope misuse", err)
	}
	t.Logf("%v", err)
	if dev.CurrentBytes() != held {
		t.Errorf("the failed op left %d bytes allocated", dev.CurrentBytes()-held)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Errorf("the first goroutine's step: %v", err)
	}
	if w.Grad() == nil {
		t.Errorf("the first goroutine's step left no gradient")
	}
	w.ZeroGrad()
	if n := dev.LiveBlocks(); n != 1 {
		t.Errorf("%d blocks live, want 1 (w): %v", n, dev.Live())
	}
}

// TestScopeConcurrentOpsFail: two goroutines running ops on one scope
// without any synchronisation: one of them soon gets the scope misuse
// error (their bookkeeping overlaps), and nothing crashes. Both stop at
// the first error, or after a second.
func TestScopeConcurrentOpsFail(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	m := newMLP(dev, 12, 32, 4, 1)
	defer m.release()
	s := autograd.NewScope()
	errs := make([]error, 2)
	var steps [2]int
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer stop.Store(true)
			x, _ := batch(rand.New(rand.NewPCG(uint64(g), 1)), 16, 12, 4)
			deadline := time.Now().Add(time.Second)
			for ; errs[g] == nil && !stop.Load() && time.Now().Before(deadline); steps[g]++ {
				errs[g] = autograd.Try(func() {
					s.Autocast(dtype.BF16, func() {
						h := autograd.Linear(s.FromFloat32s(dev, []int{16, 12}, x), m.w1, m.b1).ReLU()
						autograd.Linear(h, m.w2, m.b2).Sum(false)
					})
				})
			}
		}()
	}
	wg.Wait()
	t.Logf("forwards run: %v; errors: %v", steps, errs)
	seen := false
	for g, err := range errs {
		switch {
		case scopeMisuse(err):
			seen = true
		case err != nil:
			t.Errorf("goroutine %d: %v, want nil or the scope misuse", g, err)
		}
	}
	if !seen {
		t.Errorf("two goroutines used one scope for a second and neither got the scope misuse error")
	}
	s.Release()
	if n := dev.LiveBlocks(); n != 4 {
		t.Errorf("%d blocks live after Release, want the 4 parameters: %v", n, dev.Live())
	}
}

// TestScopeHandover: goroutines taking turns with one scope — each runs a
// whole step, then hands the scope on through a channel — is legitimate
// use: no error, and the losses equal those of one goroutine.
func TestScopeHandover(t *testing.T) {
	const steps = 6
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	want := trainCurve(dev, 3, steps)

	m := newMLP(dev, 12, 32, 4, 3)
	defer m.release()
	rng := rand.New(rand.NewPCG(3, 9))
	s := autograd.NewScope()
	turn := make(chan int)
	got := make([]float64, steps)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range turn {
				x, y := batch(rng, 16, 12, 4)
				got[i] = m.step(s, dev, x, y, 16, 12, 0.05)
				if i+1 < steps {
					turn <- i + 1
				} else {
					close(turn)
				}
			}
		}()
	}
	turn <- 0
	wg.Wait()
	for i := range steps {
		if got[i] != want[i] {
			t.Errorf("step %d: loss %v handed between goroutines, %v in one", i, got[i], want[i])
		}
	}
}
