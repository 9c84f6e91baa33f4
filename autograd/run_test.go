package autograd_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestScopeRun: Run returns f's error, an op's *Error and an OOM as
// errors, releases the scope in every case, and lets other panics through.
func TestScopeRun(t *testing.T) {
	dev := cpu.New(0, device.Options{Capacity: 4 << 20})
	defer dev.Close()
	w := autograd.Param(dev, dtype.F32, "w", 256, 256)
	defer w.Release()
	before := dev.CurrentBytes()
	s := autograd.NewScope()
	mine := errors.New("mine")
	var oom *device.OOMError
	var ae *autograd.Error
	for _, c := range []struct {
		name string
		f    func() error
		ok   func(error) bool
	}{
		{"nil", func() error { s.Zeros(dev, dtype.F32, 8); return nil }, func(err error) bool { return err == nil }},
		{"f's error", func() error { s.Zeros(dev, dtype.F32, 8); return mine }, func(err error) bool { return err == mine }},
		{"oom", func() error {
			x := s.Zeros(dev, dtype.F32, 1024, 256)
			for range 100 {
				x = autograd.Linear(x, w, nil)
			}
			return nil
		}, func(err error) bool { return errors.As(err, &oom) }},
		{"misuse", func() error { s.Zeros(dev, dtype.F32, 2, 3).MatMul(s.Zeros(dev, dtype.F32, 4, 5)); return nil },
			func(err error) bool { return errors.As(err, &ae) && ae.Op == "matmul" }},
		{"bmm of unbatched", func() error {
			autograd.BMM(s.Zeros(dev, dtype.F32, 2, 3), s.Zeros(dev, dtype.F32, 2, 3, 4))
			return nil
		},
			func(err error) bool {
				return errors.As(err, &ae) && ae.Op == "bmm" && strings.Contains(err.Error(), "[2 3] and [2 3 4]")
			}},
		{"backward", func() error {
			y := autograd.Linear(s.Zeros(dev, dtype.F32, 4, 256), w, nil).Sum(false)
			return y.Backward()
		}, func(err error) bool { return err == nil && w.Grad() != nil }},
	} {
		err := s.Run(c.f)
		if !c.ok(err) {
			t.Errorf("%s: Run = %v", c.name, err)
		}
		got := dev.CurrentBytes()
		if g := w.Grad(); g != nil {
			got -= g.Block().Len()
		}
		if got != before || s.Owned() != 0 {
			t.Errorf("%s: after Run the device holds %d bytes (want %d) and the scope owns %d tensors", c.name, got, before, s.Owned())
		}
	}
	w.ZeroGrad()
	defer func() {
		if r := recover(); r != "not ours" {
			t.Errorf("a foreign panic came out as %v", r)
		}
		if s.Owned() != 0 {
			t.Errorf("the scope owns %d tensors after a foreign panic", s.Owned())
		}
	}()
	s.Run(func() error { s.Zeros(dev, dtype.F32, 8); panic("not ours") })
}
