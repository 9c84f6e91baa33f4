package optim_test

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// TestUndoOnHostDevice: StepParam's undo copies live on the host device,
// tag optimizer, op step_undo — the parameter's bytes the first time (no
// state to save yet), its bytes plus its state's (as the compute device's
// allocator counts them) once it has state — and Restore and Release both
// bring the host back to zero.
func TestUndoOnHostDevice(t *testing.T) {
	big := make([]float64, 200)
	for i := range big {
		big[i] = float64(i%7) - 3
	}
	makers := map[string]func([]nn.Param) (optim.ParamStepper, error){
		"adamw": func(ps []nn.Param) (optim.ParamStepper, error) { return optim.NewAdamW(ps, optim.AdamConfig{}) },
		"adamw8bit": func(ps []nn.Param) (optim.ParamStepper, error) {
			return optim.NewAdamW8bit(ps, optim.AdamConfig{}, optim.Quant8Config{MinElems: 16, Block: 64})
		},
	}
	for name, mk := range makers {
		dev, host := cpu.New(0, device.Options{}), cpu.New(100, device.Options{})
		w := param(dev, dtype.F32, "w", big...)
		o, err := mk(params(w))
		if err != nil {
			t.Fatal(err)
		}
		for i, release := range []bool{true, false, true} {
			setGrad(t, w, big)
			state := dev.Stats().ByTag[device.Optimizer].Current // before the update
			u, err := o.StepParam(w, host)
			if err != nil {
				t.Fatal(err)
			}
			want := w.Bytes() + state
			if got := host.Stats().ByTag[device.Optimizer].Current; got != want || u.Bytes() != want {
				t.Errorf("%s: update %d: host optimizer bytes %d (undo %d), want %d (parameter %d + state %d)", name, i, got, u.Bytes(), want, w.Bytes(), state)
			}
			for _, g := range host.Live() {
				if g.Tag != device.Optimizer || !strings.Contains(g.Creator, optim.UndoOp) {
					t.Errorf("%s: update %d: host block %+v, want tag optimizer, op %s", name, i, g, optim.UndoOp)
				}
			}
			if release {
				u.Release()
			} else {
				u.Restore()
			}
			if got := host.Stats().Requested.Current; got != 0 {
				t.Errorf("%s: update %d: host holds %d bytes after the undo ended, want 0", name, i, got)
			}
			w.ZeroGrad()
		}
		o.Release()
	}
}

// TestUndoHostTooSmall: when the host device cannot hold the copies,
// StepParam fails before any change, naming the parameter.
func TestUndoHostTooSmall(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	host := cpu.New(100, device.Options{Capacity: 8})
	w := param(dev, dtype.F32, "w", 1, 2, 3, 4)
	o, err := optim.NewAdamW(params(w), optim.AdamConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Release()
	setGrad(t, w, []float64{1, 1, 1, 1})
	state := dev.Stats().Requested.Current
	_, err = o.StepParam(w, host)
	if err == nil || !strings.Contains(err.Error(), `copying parameter "w"`) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("StepParam on a full host: error %v, want one naming parameter \"w\" and saying nothing changed", err)
	}
	if got := w.Float64s(); got[0] != 1 || got[3] != 4 {
		t.Errorf("parameter changed: %v", got)
	}
	if dev.Stats().Requested.Current != state || host.Stats().Requested.Current != 0 {
		t.Errorf("device %d bytes (want %d), host %d (want 0) after the failure", dev.Stats().Requested.Current, state, host.Stats().Requested.Current)
	}
	if _, err := o.StepParam(w, nil); err == nil || !strings.Contains(err.Error(), "no host device") {
		t.Errorf("StepParam with no host: error %v, want one saying there is no host device", err)
	}
}
