package autograd

import (
	"errors"
	"fmt"

	"github.com/headroom-ml/headroom/device"
)

// Error is a programmer error inside an op: shapes, dtypes or devices that do
// not fit, a tensor used after Release, a wrong call order. Ops panic with
// *Error; exported units of work (Backward, Try) return it as an error.
type Error struct {
	// Op names the operation ("matmul", "backward").
	Op string
	// Msg says what was wrong, with the shapes and values involved.
	Msg string
	// Err, when set, is the condition reported (ErrScopeInUse), for
	// errors.Is.
	Err error
}

func (e *Error) Error() string { return "autograd: " + e.Op + ": " + e.Msg }

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// ErrScopeInUse is what the *Error of an op that found its scope in use
// by another goroutine at the same moment wraps (a Scope belongs to one
// goroutine at a time).
var ErrScopeInUse = errors.New("scope in use by another goroutine")

// fail panics with an *Error for op.
func fail(op, format string, args ...any) {
	panic(&Error{Op: op, Msg: fmt.Sprintf(format, args...)})
}

// Try runs f and returns the project's typed panics as errors: *Error for
// misuse, *device.OOMError for memory and *device.KernelError for a device
// that failed to compute (a launch failure on a GPU). Any other panic is not the
// project's and propagates unchanged. A step is better written with
// Scope.Run, which also returns f's error and releases the scope; Try is
// for work outside a step, such as building a model from layers whose
// constructors panic when memory runs out:
//
//	if err := autograd.Try(func() { model = nn.NewSequential(…) }); err != nil { … }
func Try(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = asError(r)
			if err == nil {
				panic(r)
			}
		}
	}()
	f()
	return nil
}

// Run runs f as one unit of work in the scope — a training or evaluation
// step — and returns its error: f's own (return loss.Backward(), say) or
// one of the project's typed panics raised by an op inside f (*Error for
// misuse, *device.OOMError for memory). Whatever happens, everything the
// scope owns is released when f returns, so the device holds after Run
// what it held before it, plus what f kept (Scope.Keep) and the leaves'
// gradients — except after ErrScopeInUse: then another goroutine is using
// the scope at the same time, and releasing it would free that
// goroutine's tensors under it, so Run leaves the scope alone. A Run that
// starts while another Run of the scope is running (in another goroutine,
// or around it) returns ErrScopeInUse at once, having done nothing: steps
// of one scope never interleave. It is the one way to write a step without
// panic(err):
//
//	err := s.Run(func() error {
//		loss := autograd.CrossEntropy(model.Forward(s.FromFloat32s(dev, shape, x)), y, autograd.CEOptions{})
//		lossValue = loss.Item() // copy out what outlives the step
//		return loss.Backward()
//	})
//	if err != nil { … }         // errors.As(err, &oom) for *device.OOMError
//	err = opt.Step()
//
// Any other panic is a bug, not the project's: it propagates (after the
// release).
func (s *Scope) Run(f func() error) (err error) {
	if !s.inRun.CompareAndSwap(0, 1) {
		return &Error{Op: "run", Err: ErrScopeInUse, Msg: "another step is running in the scope (Run in another goroutine, or around this one): a Scope and its tensors belong to one goroutine at a time; give each goroutine its own scope"}
	}
	defer s.inRun.Store(0)
	defer func() {
		if errors.Is(err, ErrScopeInUse) {
			return
		}
		if rerr := Try(s.Release); err == nil {
			err = rerr
		}
	}()
	if terr := Try(func() { err = f() }); terr != nil {
		return terr
	}
	return err
}

// asError returns the project's typed panic value r as an error, or nil.
func asError(r any) error {
	switch e := r.(type) {
	case *Error:
		return e
	case *device.OOMError:
		return e
	case *device.KernelError:
		return e
	}
	return nil
}

// IsOOM reports whether err is or wraps a *device.OOMError.
func IsOOM(err error) bool {
	var oom *device.OOMError
	return errors.As(err, &oom)
}
