package autograd_test

import (
	"errors"
	"fmt"
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
	return errors.As(err, &e) && errors.Is(err, autograd.ErrScopeInUse) && strings.Contains(e.Msg, "belong to one goroutine at a time")
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

// TestScopeConcurrentOpsFail: two goroutines running forward ops on one
// scope without any synchronisation: one of them soon gets the scope
// misuse error (their bookkeeping overlaps), and nothing crashes. Both
// stop at the first error, or after a second. (Goroutines that also change
// the scope's modes — autocast, no-grad — can make each other's ops fail
// otherwise first: whole steps belong in Run, which refuses a second step
// outright.)
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
					h := autograd.Linear(s.FromFloat32s(dev, []int{16, 12}, x), m.w1, m.b1).ReLU()
					autograd.Linear(h, m.w2, m.b2).Sum(false)
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

// TestScopeRunsNeverInterleave: a Run of a scope while another Run of it
// is running (in another goroutine, or around it) returns ErrScopeInUse
// at once, doing nothing; the running step completes untouched.
func TestScopeRunsNeverInterleave(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	s := autograd.NewScope()
	inside, resume := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- s.Run(func() error {
			x := s.Full(dev, dtype.F32, 2, 4)
			close(inside)
			<-resume
			if got := x.Float64s(); got[0] != 2 {
				return fmt.Errorf("x = %v, want 2s", got)
			}
			return nil
		})
	}()
	<-inside
	held := dev.CurrentBytes()
	ran := false
	if err := s.Run(func() error { ran = true; return nil }); !scopeMisuse(err) || ran {
		t.Errorf("Run during another goroutine's Run: error %v (f ran: %v), want ErrScopeInUse without running f", err, ran)
	}
	if dev.CurrentBytes() != held {
		t.Errorf("the refused Run changed the device's bytes: %d, %d before", dev.CurrentBytes(), held)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Errorf("the first step: %v", err)
	}
	if err := s.Run(func() error { return s.Run(func() error { return nil }) }); !scopeMisuse(err) {
		t.Errorf("Run inside Run: error %v, want ErrScopeInUse", err)
	}
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("%d blocks live: %v", n, dev.Live())
	}
}

// TestScopeConcurrentSteps: two goroutines running whole training steps
// (forward, backward, release) with Run on one scope: one soon gets
// ErrScopeInUse, no other error occurs and nothing crashes; the scope is
// then released and nothing but the parameters remains. Both stop at the
// first error, or after a second.
func TestScopeConcurrentSteps(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	m := newMLP(dev, 12, 32, 4, 1)
	defer m.release()
	s := autograd.NewScope()
	errs := make([]error, 2)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer stop.Store(true)
			x, y := batch(rand.New(rand.NewPCG(uint64(g), 1)), 16, 12, 4)
			for deadline := time.Now().Add(time.Second); errs[g] == nil && !stop.Load() && time.Now().Before(deadline); {
				errs[g] = s.Run(func() error {
					var l *autograd.Tensor
					s.Autocast(dtype.BF16, func() {
						h := autograd.Linear(s.FromFloat32s(dev, []int{16, 12}, x), m.w1, m.b1).ReLU()
						l = autograd.CrossEntropy(autograd.Linear(h, m.w2, m.b2), s.FromInt64s(dev, []int{16}, y), autograd.CEOptions{})
					})
					return l.Backward()
				})
			}
		}()
	}
	wg.Wait()
	t.Logf("errors: %v", errs)
	if !scopeMisuse(errs[0]) && !scopeMisuse(errs[1]) {
		t.Errorf("two goroutines ran steps on one scope for a second and neither got ErrScopeInUse")
	}
	for g, err := range errs {
		if err != nil && !scopeMisuse(err) {
			t.Errorf("goroutine %d: %v, want nil or ErrScopeInUse", g, err)
		}
	}
	s.Release()
	for _, p := range m.params() {
		p.ZeroGrad()
	}
	if n := dev.LiveBlocks(); n != 4 {
		t.Errorf("%d blocks live after Release, want the 4 parameters: %v", n, dev.Live())
	}
}
