package optim

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestCheckPair covers the gradient checks that autograd's own gradients
// cannot trip (backward always gives a leaf a gradient of its shape,
// dtype and device).
func TestCheckPair(t *testing.T) {
	d0, d1 := cpu.New(0, device.Options{}), cpu.New(1, device.Options{})
	p := autograd.New(d0, dtype.F32, device.Parameter, 2, 3)
	ok := autograd.New(d0, dtype.F32, device.Gradient, 2, 3)
	big := autograd.New(d0, dtype.F32, device.Gradient, 4, 3)
	wide := autograd.New(d0, dtype.F32, device.Gradient, 2, 6)
	released := autograd.New(d0, dtype.F32, device.Gradient, 2, 3)
	released.Release()
	var made []*autograd.Tensor
	mk := func(t *autograd.Tensor) *autograd.Tensor { made = append(made, t); return t }
	defer func() {
		for _, x := range append(made, p, ok, big, wide) {
			x.Release()
		}
		if n := d0.CurrentBytes() + d1.CurrentBytes(); n != 0 {
			t.Errorf("%d bytes left", n)
		}
	}()
	for _, c := range []struct {
		p, g *autograd.Tensor
		want string
	}{
		{p, mk(autograd.New(d0, dtype.F32, device.Gradient, 3, 2)), "gradient of \"w\" has shape [3 2], want the parameter's [2 3]"},
		{p, mk(autograd.New(d0, dtype.F64, device.Gradient, 2, 3)), "gradient of \"w\" has dtype f64, want the parameter's f32"},
		{p, mk(autograd.New(d1, dtype.F32, device.Gradient, 2, 3)), "gradient of \"w\" is on cpu:1, the parameter on cpu:0"},
		{p, mk(big.Slice(0, 0, 2)), ""}, // a contiguous view of a flat buffer
		{p, mk(big.Slice(0, 2, 4)), ""},
		{p, mk(wide.Slice(1, 0, 3)), "is not contiguous"},
		{p, mk(mk(ok.T()).T()), ""},
		{p, released, "gradient of \"w\" was released"},
		{mk(autograd.New(d0, dtype.BF16, device.Parameter, 2, 3)), ok, "has dtype bf16: the optimizer updates f32 or f64 parameters; set MasterWeights"},
		{mk(big.Slice(0, 1, 3)), ok, ""},
		{mk(wide.Slice(1, 3, 6)), ok, "parameter \"w\" ([2 3], strides [6 1]) is not contiguous"},
		{p, ok, ""},
	} {
		err := checkPair("adam", "w", c.p, c.g, false)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("checkPair(%v, %v) = %v, want nil", c.p, c.g, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("checkPair(%v, %v) = %v, want an error containing %q", c.p, c.g, err, c.want)
		}
	}
}
