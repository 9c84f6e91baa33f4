package optim_test

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// TestStepOnViewsOfAFlatBuffer trains two parameters that live in one flat
// buffer (at offsets 0 and 3), with gradients that are views of another,
// and checks every value against the same optimizer over separate tensors.
func TestStepOnViewsOfAFlatBuffer(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	vals := [][]float64{{0.5, -1, 2}, {3, -0.25}}
	grads := [][]float64{{0.1, 0.2, -0.3}, {-1, 0.5}}
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		master := dt != dtype.F32
		var sep, flat []*autograd.Tensor
		pbuf := autograd.New(dev, dt, device.Parameter, 6) // one element of padding
		gbuf := autograd.New(dev, dt, device.Gradient, 6)
		off := 0
		for i, v := range vals {
			sep = append(sep, param(dev, dt, "p", v...))
			setGrad(t, sep[i], grads[i])
			p := param(dev, dt, "p", v...)
			view := pbuf.Slice(0, off, off+len(v))
			p.MoveInto(view)
			view.Release()
			p.SetGrad(gbuf.Slice(0, off, off+len(v)))
			p.Grad().SetFloat64s(grads[i])
			flat = append(flat, p)
			off += len(v)
		}
		mk := func(ts []*autograd.Tensor) *optim.Adam {
			o, err := optim.NewAdamW([]nn.Param{{Name: "a", T: ts[0]}, {Name: "b", T: ts[1]}}, optim.AdamConfig{LR: 0.1, MasterWeights: master})
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
		a, b := mk(sep), mk(flat)
		for step := range 3 {
			if err := a.Step(); err != nil {
				t.Fatal(err)
			}
			if err := b.Step(); err != nil {
				t.Fatal(err)
			}
			for i := range sep {
				want, got := sep[i].Float64s(), flat[i].Float64s()
				for j := range want {
					if want[j] != got[j] {
						t.Errorf("%s step %d: parameter %d = %v on views, %v on tensors", dt, step, i, got, want)
						break
					}
				}
			}
		}
		if pad := pbuf.Float64s()[5]; pad != 0 {
			t.Errorf("%s: the padding after the views changed to %v", dt, pad)
		}
		a.Release()
		b.Release()
		for _, x := range append(append(sep, flat...), pbuf, gbuf) {
			x.Release()
		}
	}
	if dev.LiveBlocks() != 0 {
		t.Errorf("leak: %v", dev.Live())
	}
}
