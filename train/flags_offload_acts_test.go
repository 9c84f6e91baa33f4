package train_test

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// TestOffloadActivationsFlag: the flag's runner moves a stack's saved
// tensors off the device (a lower activation peak than plain's, the same
// gradient), and it refuses the other activation techniques.
func TestOffloadActivationsFlag(t *testing.T) {
	c, err := parseActivation("--offload-activations")
	if err != nil {
		t.Fatal(err)
	}
	run, desc, err := c.RunBlocks()
	if err != nil || run == nil || !strings.Contains(desc, "offloaded") {
		t.Fatalf("--offload-activations: runner %v, %q, %v; want a runner described as offloaded", run != nil, desc, err)
	}
	p0, g0 := mlpStep(t, nil)
	p1, g1 := mlpStep(t, run)
	if p1 >= p0 || g0 != g1 {
		t.Errorf("--offload-activations: activation peak %d B (plain %d B), gradient sum %v (plain %v): want a lower peak, the same gradient", p1, p0, g1, g0)
	}
	hs := c.ActivationHosts()
	if len(hs) != 1 || hs[0].Name() != "cpu:100" || hs[0].Stats().Tag(device.Activation).Peak == 0 || hs[0].LiveBlocks() != 0 {
		t.Errorf("activation hosts %v: want cpu:100 alone, with an activation peak and nothing left", hs)
	}
	for _, other := range []string{"--checkpoint", "--checkpoint-budget=1MiB", "--selective"} {
		_, err := parseActivation("--offload-activations", other)
		if err == nil || !strings.Contains(err.Error(), "choose one") {
			t.Errorf("--offload-activations %s: err %v, want \"choose one\"", other, err)
		}
	}
}

// mlpStep runs a step of 6 Linear+ReLU blocks through run (nil: plain)
// and returns the activation peak and the sum of the gradients.
func mlpStep(t *testing.T, run func([]nn.Layer, *autograd.Tensor) *autograd.Tensor) (int64, float64) {
	t.Helper()
	dev := cpu.New(0, device.Options{})
	b := nn.NewBuilder(dev, dtype.F32, 1)
	var ls []nn.Layer
	for i := range 6 {
		ls = append(ls, nn.NewSequential(nn.NewLinear(b, "fc"+string(rune('0'+i)), 16, 16, true), nn.ReLU("relu")))
	}
	m := nn.NewSequential(ls...)
	defer nn.Release(m)
	s := autograd.NewScope()
	defer s.Release()
	x := s.Full(dev, dtype.F32, 0.5, 8, 16)
	var h *autograd.Tensor
	if run == nil {
		h = m.Forward(x)
	} else {
		h = run(ls, x)
	}
	if err := h.Pow(2).Mean(false).Backward(); err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, p := range nn.Trainable(m) {
		for _, v := range p.T.Grad().Float32s() {
			sum += float64(v)
		}
	}
	return dev.Stats().Tag(device.Activation).Peak, sum
}
