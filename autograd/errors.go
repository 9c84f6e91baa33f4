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
}

func (e *Error) Error() string { return "autograd: " + e.Op + ": " + e.Msg }

// fail panics with an *Error for op.
func fail(op, format string, args ...any) {
	panic(&Error{Op: op, Msg: fmt.Sprintf(format, args...)})
}

// Try runs f and returns the project's typed panics as errors: *Error for
// misuse and *device.OOMError for memory. Any other panic is not the
// project's and propagates unchanged. Use it around a training step:
//
//	if err := autograd.Try(func() { loss = model.Forward(s, x) }); err != nil { … }
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

// asError returns the project's typed panic value r as an error, or nil.
func asError(r any) error {
	switch e := r.(type) {
	case *Error:
		return e
	case *device.OOMError:
		return e
	}
	return nil
}

// IsOOM reports whether err is or wraps a *device.OOMError.
func IsOOM(err error) bool {
	var oom *device.OOMError
	return errors.As(err, &oom)
}
