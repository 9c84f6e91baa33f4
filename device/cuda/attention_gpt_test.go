package cuda_test

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/cuda"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// TestGPTStep runs one forward and backward of a small GPT (embeddings,
// layer norms, fused causal attention, dropout, cross entropy with label
// smoothing) on the cpu and on the emulated cuda device from the same
// seeds, and compares the loss and every gradient element.
func TestGPTStep(t *testing.T) {
	gd, err := cuda.Open(0, device.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer gd.Close()
	lc, gc := gptStep(t, cpu.New(0, device.Options{}))
	lg, gg := gptStep(t, gd)
	if math.Abs(lc-lg) > 1e-5*math.Abs(lc) {
		t.Errorf("loss %.9g on cuda, %.9g on cpu", lg, lc)
	}
	for name, want := range gc {
		got, scale := gg[name], 0.0
		for _, w := range want {
			scale = max(scale, math.Abs(float64(w)))
		}
		for i, w := range want {
			if math.Abs(float64(got[i]-w)) > 1e-4*scale {
				t.Errorf("grad %s[%d] = %g on cuda, %g on cpu", name, i, got[i], w)
				break
			}
		}
	}
	t.Logf("loss %.7f (cpu %.7f), %d gradients", lg, lc, len(gc))
}

// gptStep returns the loss and the parameters' gradients (by name) of one
// step on dev.
func gptStep(t *testing.T, dev *device.Device) (float64, map[string][]float32) {
	cfg := nn.GPTConfig{Vocab: 23, Context: 9, Layers: 2, Heads: 2, Width: 16, Dropout: 0.1, Bias: true}
	g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "gpt", cfg, autograd.NewGenerator(7))
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(g)
	s := autograd.NewScope()
	defer s.Release()
	tok := []int64{1, 2, 3, 4, 5, 10, 9, 8, 7, 6, 22, 0, 3, 3, 3, 1, 2, 0, 1}
	idx := s.FromInt64s(dev, []int{2, 9}, tok[:18])
	y := s.FromInt64s(dev, []int{18}, tok[1:])
	loss := autograd.CrossEntropy(g.Forward(idx).Reshape(18, 23), y, autograd.CEOptions{LabelSmoothing: 0.1})
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	grads := map[string][]float32{}
	for _, p := range g.Params() {
		if !p.Buffer && p.T.Grad() != nil {
			grads[p.Name] = p.T.Grad().Float32s()
		}
	}
	return loss.Item(), grads
}
