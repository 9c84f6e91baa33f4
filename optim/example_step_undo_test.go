package optim_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// StepParam updates one parameter and keeps its undo on a host device:
// the parameter's bytes and, once it has state, the state's (Adam on
// F32: 4 + 8 bytes per element). Restore puts everything back bit for bit;
// both Restore and Release free the copies.
func ExampleAdam_StepParam() {
	dev, host := cpu.New(0, device.Options{}), cpu.New(100, device.Options{})
	w := autograd.Param(dev, dtype.F32, "w", 2)
	w.SetFloat32s([]float32{1, -2})
	opt, err := optim.NewAdam([]nn.Param{{Name: "w", T: w}}, optim.AdamConfig{LR: 0.1})
	if err != nil {
		panic(err)
	}
	defer opt.Release()
	for _, restore := range []bool{false, true} {
		w.SetGrad(autograd.Full(dev, dtype.F32, 1, 2))
		u, err := opt.StepParam(w, host)
		if err != nil {
			panic(err)
		}
		fmt.Println("undo on", host, "holds", u.Bytes(), "bytes; w =", w.Float32s())
		if restore {
			u.Restore()
		} else {
			u.Release()
		}
		w.ZeroGrad()
		fmt.Println("after", map[bool]string{false: "Release", true: "Restore"}[restore]+": w =", w.Float32s(), "host holds", host.Stats().Requested.Current)
	}
	// Output:
	// undo on cpu:100 holds 8 bytes; w = [0.9 -2.1]
	// after Release: w = [0.9 -2.1] host holds 0
	// undo on cpu:100 holds 24 bytes; w = [0.79999995 -2.1999998]
	// after Restore: w = [0.9 -2.1] host holds 0
}
