package bench

import (
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestSpeedModels: each speed model's parameter count is its PyTorch
// twin's (scripts/bench_torch.py, torch 1.13: sum of p.numel(); the 64×64
// ResNets have the 32×32 ones' parameters), and one BF16 step runs with a
// finite time.
func TestSpeedModels(t *testing.T) {
	torch := map[string]int64{"resnet18": 11173962, "resnet50": 23520842, "resnet18-64": 11173962, "resnet50-64": 23520842, "gpt6x256": 4870144}
	for _, m := range SpeedModels() {
		s, err := NewSpeedStep(m, dtype.BF16)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Params(); got != torch[m] {
			t.Errorf("%s: %d parameters, PyTorch's twin %d", m, got, torch[m])
		}
		if m == "resnet18" {
			if err := s.Run(); err != nil || s.PeakBytes() <= 0 {
				t.Errorf("%s step: %v, peak %d", m, err, s.PeakBytes())
			}
		}
		s.Release()
	}
	if _, err := NewSpeedStep("vgg", dtype.F32); err == nil {
		t.Error("unknown speed model: no error")
	}
	if _, err := NewSpeedStep("resnet18", dtype.F16); err == nil {
		t.Error("f16 speed step: no error")
	}
}
