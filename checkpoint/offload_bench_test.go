package checkpoint_test

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// BenchmarkOffloadGPTBlocks times forward + backward of 8 GPT blocks at
// the transformer example's size (width 128, 4 heads, context 64, batch
// 32, dropout 0.1) plain and with activation offload to a cpu host: run with -count N
// so that the variants alternate in one binary.
func BenchmarkOffloadGPTBlocks(b *testing.B) {
	dev := cpu.New(0, device.Options{})
	benchOffload(b, dev, benchGPTBlocks(dev, 0.1), []int{32, 64, 128})
}

// BenchmarkOffloadResNetBlocks is BenchmarkOffloadGPTBlocks for 4 basic
// ResNet blocks of 32 channels on a batch of 32 images of 16×16.
func BenchmarkOffloadResNetBlocks(b *testing.B) {
	dev := cpu.New(0, device.Options{})
	bl := nn.NewBuilder(dev, dtype.F32, 1)
	var ls []nn.Layer
	for i := range 4 {
		ls = append(ls, nn.NewBasicBlock(bl, "b"+string(rune('0'+i)), 32, 32, 1))
	}
	benchOffload(b, dev, ls, []int{32, 32, 16, 16})
}

// benchOffload runs the plain and offloaded variants of a step of ls.
func benchOffload(b *testing.B, dev *device.Device, ls []nn.Layer, shape []int) {
	m := nn.NewSequential(ls...)
	defer nn.Release(m)
	n := 1
	for _, d := range shape {
		n *= d
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = math.Sin(float64(i) * 0.3)
	}
	host := cpu.New(100, device.Options{})
	o := &checkpoint.Offload{Host: host}
	variants := []struct {
		name string
		run  func(*autograd.Tensor) *autograd.Tensor
	}{
		{"plain", m.Forward},
		{"offload", func(h *autograd.Tensor) *autograd.Tensor { return o.Forward(ls, h) }},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				s := autograd.NewScope()
				xs := s.FromFloat64s(dev, shape, x).Cast(dtype.F32)
				if err := v.run(xs).Pow(2).Mean(false).Backward(); err != nil {
					b.Fatal(err)
				}
				s.Release()
				nn.ZeroGrad(m)
			}
			b.ReportMetric(float64(dev.Stats().ByTag[device.Activation].Peak), "act-peak-B")
			dev.ResetPeak()
		})
	}
}
