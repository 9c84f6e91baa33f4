package prune_test

import (
	"fmt"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/prune"
)

// TestTable logs the table of docs/PERFORMANCE.md's Pruning section:
// parameter bytes as the allocator counts them (tag parameter, current)
// before and after pruning, and FLOPs per sample, for SmallResNet (1×28×28,
// cpu) and ResNet-50 (3×224×224, meta) at 30% and 50%, and GPT-2 small
// (T = 1024, meta). It checks that the allocator agrees with the report.
func TestTable(t *testing.T) {
	type row struct {
		name  string
		build func(dev *device.Device) (nn.Module, error)
		dev   func() *device.Device
		fracs [][2]float64
	}
	gpt2 := nn.GPTConfig{Vocab: 50257, Context: 1024, Layers: 12, Heads: 12, Width: 768, Bias: true, TieEmbeddings: true}
	rows := []row{
		{"SmallResNet, 1×28×28", func(dev *device.Device) (nn.Module, error) {
			return nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, 1), "", nn.ResNetConfig{InChannels: 1})
		}, func() *device.Device { return cpu.New(0, device.Options{}) }, [][2]float64{{0.3, 0}, {0.5, 0}}},
		{"ResNet-50, 3×224×224", func(dev *device.Device) (nn.Module, error) {
			return nn.ResNet50(nn.NewBuilder(dev, dtype.F32, 1), "", nn.ResNetConfig{})
		}, func() *device.Device { return meta.New(0, device.Options{}) }, [][2]float64{{0.3, 0}, {0.5, 0}}},
		{"GPT-2 small, T=1024", func(dev *device.Device) (nn.Module, error) {
			return nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "", gpt2, nil)
		}, func() *device.Device { return meta.New(0, device.Options{}) }, [][2]float64{{0.25, 0.3}, {0.5, 0.5}}},
	}
	out := "\n| model | pruned | parameter bytes before → after | FLOPs before → after |\n|---|---|---|---|\n"
	for _, r := range rows {
		for _, f := range r.fracs {
			dev := r.dev()
			m, err := r.build(dev)
			if err != nil {
				t.Fatal(err)
			}
			before := paramBytes(dev)
			var rep prune.Report
			what := fmt.Sprintf("%.0f%% of inner channels", 100*f[0])
			switch m := m.(type) {
			case *nn.ResNet:
				rep, err = prune.ResNet(m, f[0], prune.Options{})
			case *nn.GPT:
				rep, err = prune.GPT(m, f[0], f[1], prune.Options{})
				what = fmt.Sprintf("%.0f%% of heads, %.0f%% of MLP width", 100*f[0], 100*f[1])
			}
			if err != nil {
				t.Fatal(err)
			}
			after := paramBytes(dev)
			if before != rep.BytesBefore || after != rep.BytesAfter {
				t.Errorf("%s: allocator %d → %d, report %d → %d", r.name, before, after, rep.BytesBefore, rep.BytesAfter)
			}
			out += fmt.Sprintf("| %s | %s | %s → %s (%.1f%%) | %s → %s (%.1f%%) |\n", r.name, what,
				group3(before), group3(after), 100*float64(after)/float64(before),
				group3(rep.FLOPsBefore), group3(rep.FLOPsAfter), 100*float64(rep.FLOPsAfter)/float64(rep.FLOPsBefore))
			nn.Release(m)
		}
	}
	t.Log(out)
}

// group3 writes n with thousands separators.
func group3(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
