package nn

import (
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
)

// TestResNetBlockFLOPs: ResNet-18's FLOPs at 224×224 add up (with fc's
// 2·512·1000) to torchvision's published 1.814 GFLOPs of multiply-adds
// times two within 1% (its count also covers only convolutions and fc),
// and ResNet-50's to 4.09 G multiply-adds.
func TestResNetBlockFLOPs(t *testing.T) {
	for _, tc := range []struct {
		blocks []int
		block  string
		gmacs  float64
	}{{[]int{2, 2, 2, 2}, "basic", 1.814}, {[]int{3, 4, 6, 3}, "bottleneck", 4.089}} {
		b := NewBuilder(meta.New(0, device.Options{}), dtype.F32, 1)
		r, err := NewResNet(b, "r", ResNetConfig{Blocks: tc.blocks, Block: tc.block, Classes: 1000})
		if err != nil {
			t.Fatal(err)
		}
		fl := r.BlockFLOPs(1, 224, 224)
		var sum int64
		for _, f := range fl {
			sum += f
		}
		fc := int64(2 * r.FC.In * r.FC.Out)
		got := float64(sum+fc) / 2e9
		t.Logf("%s %v: %d layers, %.4f G multiply-adds (torchvision %.3f)", tc.block, tc.blocks, len(fl), got, tc.gmacs)
		if got < 0.99*tc.gmacs || got > 1.01*tc.gmacs || len(fl) != 1+len(r.Blocks()) {
			t.Errorf("%s: %.4f G multiply-adds over %d layers, want %.3f within 1%%", tc.block, got, len(fl), tc.gmacs)
		}
	}
}
