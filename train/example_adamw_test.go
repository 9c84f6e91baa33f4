package train_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

// The optimizer state of a 4096-element parameter after one step, by the
// allocator: AdamW's m and v in F32 take 8 bytes an element; the 8-bit
// AdamW's codes 2 bytes an element and an F32 absmax per 2048 elements for
// each of m and v: 2·4096 + 8·2 = 8208 bytes.
func ExampleNewAdamW() {
	for _, eightBit := range []bool{false, true} {
		dev := cpu.New(0, device.Options{})
		w := autograd.Param(dev, dtype.F32, "w", 4096)
		opt, err := train.NewAdamW([]nn.Param{{Name: "w", T: w}}, nil, optim.AdamConfig{LR: 1e-3}, eightBit)
		if err != nil {
			panic(err)
		}
		s := autograd.NewScope()
		x := s.Use(w)
		if err := x.Mul(x).Sum(false).Backward(); err != nil {
			panic(err)
		}
		s.Release()
		if err := opt.Step(); err != nil {
			panic(err)
		}
		fmt.Printf("8-bit %v: optimizer bytes %d\n", eightBit, dev.Stats().ByTag[device.Optimizer].Current)
		opt.Release()
		w.Release()
	}
	// Output:
	// 8-bit false: optimizer bytes 32768
	// 8-bit true: optimizer bytes 8208
}
