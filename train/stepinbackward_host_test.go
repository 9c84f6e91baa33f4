package train_test

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

// TestStepInBackwardUndoHostPeak: the undo copies live on the Stepper's
// Host device and only there. During a step its peak is the closed form
// Σ over the parameters of their bytes plus their optimizer state's bytes
// as the compute device's allocator counts them (the first step: the
// parameters alone, there is no state to save yet), all of it tag
// optimizer; after the step it holds nothing.
func TestStepInBackwardUndoHostPeak(t *testing.T) {
	for name, mk := range map[string]func([]nn.Param) (optim.ParamStepper, error){
		"adamw": func(ps []nn.Param) (optim.ParamStepper, error) { return optim.NewAdamW(ps, optim.AdamConfig{LR: 1e-3}) },
		"adamw8bit": func(ps []nn.Param) (optim.ParamStepper, error) {
			return optim.NewAdamW8bit(ps, optim.AdamConfig{LR: 1e-3}, optim.Quant8Config{MinElems: 100, Block: 64})
		},
	} {
		dev, host := cpu.New(0, device.Options{}), cpu.New(train.UndoHost, device.Options{})
		b := nn.NewBuilder(dev, dtype.F32, 7)
		m := nn.NewSequential(nn.NewLinear(b, "fc1", 10, 24, true), nn.GELU("gelu"), nn.NewLinear(b, "fc2", 24, 6, true))
		opt, err := mk(m.Params())
		if err != nil {
			t.Fatal(err)
		}
		st := &train.Stepper{Opt: opt, StepInBackward: true, Host: host}
		x := make([]float64, 8*10)
		for i := range x {
			x[i] = float64(i%7) - 3
		}
		forward := func(s *autograd.Scope, _ int) *autograd.Tensor {
			return autograd.CrossEntropy(m.Forward(s.FromFloat64s(dev, []int{8, 10}, x).Cast(dtype.F32)),
				s.FromInt64s(dev, []int{8}, []int64{0, 1, 2, 3, 4, 5, 0, 1}), autograd.CEOptions{})
		}
		for step := range 3 {
			want := nn.ParamBytes(m) + dev.Stats().ByTag[device.Optimizer].Current
			host.ResetPeak()
			if _, stepped, err := st.Step(forward); err != nil || !stepped {
				t.Fatalf("%s: step %d: stepped %v, %v", name, step, stepped, err)
			}
			hs := host.Stats()
			if hs.Requested.Peak != want || hs.ByTag[device.Optimizer].Peak != want {
				t.Errorf("%s: step %d: host peak %d (optimizer tag %d), want %d = parameters %d + state %d", name, step,
					hs.Requested.Peak, hs.ByTag[device.Optimizer].Peak, want, nn.ParamBytes(m), want-nn.ParamBytes(m))
			}
			if hs.Requested.Current != 0 {
				t.Errorf("%s: step %d: host holds %d bytes after the step, want 0", name, step, hs.Requested.Current)
			}
		}
		t.Logf("%s: host peak %d B for %d B of parameters", name, host.Stats().Requested.Peak, nn.ParamBytes(m))
		opt.Release()
		nn.Release(m)
		if err := host.Close(); err != nil {
			t.Errorf("%s: closing the host: %v", name, err)
		}
	}
}

// TestStepInBackwardUndoHostAfterRollback: a skipped step (forced
// overflow in b after a has stepped) and a failed one free the undo
// copies too; during the skipped step the host held a's copies alone.
func TestStepInBackwardUndoHostAfterRollback(t *testing.T) {
	r := newOverflowRig(t, true)
	defer r.opt.Release()
	if stepped, err := r.step(1); err != nil || !stepped {
		t.Fatalf("clean step: stepped %v, %v", stepped, err)
	}
	host := r.st.Host
	host.ResetPeak()
	if stepped, err := r.step(1e34); err != nil || stepped {
		t.Fatalf("overflowing step: stepped %v, %v; want a skipped step", stepped, err)
	}
	want := 3 * r.a.Bytes() // a and its two moments
	if hs := host.Stats(); hs.Requested.Peak != want || hs.Requested.Current != 0 {
		t.Errorf("skipped step: host peak %d, now %d; want %d (a and its state), then 0", hs.Requested.Peak, hs.Requested.Current, want)
	}
	r.st.Opt = &failingStepper{Adam: r.opt, fail: 2}
	if _, err := r.step(1); err == nil {
		t.Fatal("the failing update did not fail the step")
	}
	if c := host.Stats().Requested.Current; c != 0 {
		t.Errorf("failed step: host holds %d bytes, want 0", c)
	}
}
