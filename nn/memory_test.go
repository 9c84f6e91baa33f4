package nn_test

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// memCase is a layer, its input and the activation bytes its doc says its
// forward leaves (output included, input excluded) for dtype size s and
// statistics size cs (norms' and attention's: 4, or 8 for F64).
type memCase struct {
	name  string
	build func(b *nn.Builder) nn.Layer
	shape []int // input shape
	ints  int   // > 0: integer input in [0, ints)
	train bool
	want  func(s, cs int64) int64
}

func memCases() []memCase {
	gen := autograd.NewGenerator(1)
	gptCfg := nn.GPTConfig{Vocab: 11, Context: 8, Layers: 3, Heads: 2, Width: 8, Dropout: 0.1, Bias: true}
	gpt := func(share bool) func(b *nn.Builder) nn.Layer {
		return func(b *nn.Builder) nn.Layer {
			c := gptCfg
			c.ShareLayers = share
			g, err := nn.NewGPT(b, "", c, gen)
			if err != nil {
				panic(err)
			}
			return g
		}
	}
	// GPT's doc formula for B = 2, T = 5 (H = 2, C = 8, V = 11, L = 3).
	gptWant := func(s, cs int64) int64 {
		const B, T, C, H, V, L = 2, 5, 8, 2, 11, 3
		block := 17*B*T*C*s + 4*B*T*cs + B*H*T*cs
		return B*T*C*s + L*block + B*T*C*s + 2*B*T*cs + B*T*V*s
	}
	return []memCase{
		{"conv 3x3 stride 2", func(b *nn.Builder) nn.Layer {
			return nn.NewConv2d(b, "c", 3, 8, [2]int{3, 3}, autograd.ConvOptions{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}, true)
		}, []int{2, 3, 9, 9}, 0, true, func(s, cs int64) int64 { return 2 * 8 * 5 * 5 * s }},
		{"conv 1x1", func(b *nn.Builder) nn.Layer {
			return nn.NewConv2d(b, "c", 4, 5, [2]int{1, 1}, autograd.ConvOptions{}, false)
		}, []int{2, 4, 6, 6}, 0, true, func(s, cs int64) int64 { return 2 * 5 * 36 * s }},
		{"batch norm train", func(b *nn.Builder) nn.Layer { return nn.NewBatchNorm2d(b, "bn", 3, nn.BatchNormOptions{}) },
			[]int{4, 3, 5, 5}, 0, true, func(s, cs int64) int64 { return 4*3*25*s + 2*3*cs }},
		{"batch norm eval", func(b *nn.Builder) nn.Layer { return nn.NewBatchNorm2d(b, "bn", 3, nn.BatchNormOptions{}) },
			[]int{4, 3, 5, 5}, 0, false, func(s, cs int64) int64 { return 4*3*25*s + 2*3*cs }},
		{"layer norm", func(b *nn.Builder) nn.Layer { return nn.NewLayerNorm(b, "ln", 6, nn.LayerNormOptions{}) },
			[]int{2, 5, 6}, 0, true, func(s, cs int64) int64 { return 60*s + 2*10*cs }},
		{"embedding", func(b *nn.Builder) nn.Layer { return nn.NewEmbedding(b, "e", 10, 6, 0) },
			[]int{3, 4}, 10, true, func(s, cs int64) int64 { return 12 * 6 * s }},
		{"dropout train", func(b *nn.Builder) nn.Layer { return nn.NewDropout(b, "d", 0.5, gen) },
			[]int{3, 7}, 0, true, func(s, cs int64) int64 { return 21 * s }},
		{"dropout eval", func(b *nn.Builder) nn.Layer { return nn.NewDropout(b, "d", 0.5, gen) },
			[]int{3, 7}, 0, false, func(s, cs int64) int64 { return 0 }},
		{"attention", func(b *nn.Builder) nn.Layer { return nn.NewCausalSelfAttention(b, "a", 8, 2, 0.1, gen, true) },
			[]int{2, 5, 8}, 0, true, func(s, cs int64) int64 { return 6*2*5*8*s + 2*2*5*cs }},
		{"attention eval", func(b *nn.Builder) nn.Layer { return nn.NewCausalSelfAttention(b, "a", 8, 2, 0.1, gen, false) },
			[]int{2, 5, 8}, 0, false, func(s, cs int64) int64 { return 6*2*5*8*s + 2*2*5*cs }},
		{"mlp", func(b *nn.Builder) nn.Layer { return nn.NewMLP(b, "m", 6, 10, 0.2, gen, true) },
			[]int{2, 3, 6}, 0, true, func(s, cs int64) int64 { return 6 * (2*10 + 6) * s }},
		{"gpt block", func(b *nn.Builder) nn.Layer {
			return nn.NewGPTBlock(b, "h", nn.GPTConfig{Width: 8, Heads: 2, Dropout: 0.1, Bias: true}, gen)
		}, []int{2, 5, 8}, 0, true, func(s, cs int64) int64 { return 17*2*5*8*s + 4*2*5*cs + 2*2*5*cs }},
		{"basic block", func(b *nn.Builder) nn.Layer { return nn.NewBasicBlock(b, "k", 4, 4, 1) },
			[]int{2, 4, 6, 6}, 0, true, func(s, cs int64) int64 { return 4*(2*4*36*s) + 4*4*cs }},
		{"basic block projection", func(b *nn.Builder) nn.Layer { return nn.NewBasicBlock(b, "k", 3, 4, 2) },
			[]int{2, 3, 7, 7}, 0, true, func(s, cs int64) int64 { return 5*(2*4*16*s) + 6*4*cs }},
		{"bottleneck", func(b *nn.Builder) nn.Layer { return nn.NewBottleneck(b, "k", 8, 2, 1) },
			[]int{2, 8, 5, 5}, 0, true, func(s, cs int64) int64 {
				a1, a2, a3 := 2*2*25*s, 2*2*25*s, 2*8*25*s
				return 2*a1 + 2*a2 + 2*a3 + 12*2*cs
			}},
		{"bottleneck projection", func(b *nn.Builder) nn.Layer { return nn.NewBottleneck(b, "k", 4, 2, 2) },
			[]int{2, 4, 6, 6}, 0, true, func(s, cs int64) int64 {
				a1, a2, a3 := 2*2*36*s, 2*2*9*s, 2*8*9*s
				return 2*a1 + 2*a2 + 3*a3 + 20*2*cs
			}},
		{"resnet imagenet stem", func(b *nn.Builder) nn.Layer {
			r, err := nn.NewResNet(b, "r", nn.ResNetConfig{Block: "bottleneck", Blocks: []int{1}, Widths: []int{4}, Classes: 5})
			if err != nil {
				panic(err)
			}
			return r
		}, []int{2, 3, 16, 16}, 0, true, func(s, cs int64) int64 {
			const N = 2
			stem := N*4*64*s + 2*4*cs + N*4*64*s + N*4*16*s // conv, bn stats, relu, max pool (16 → 8 → 4)
			a1, a2, a3 := N*4*16*s, N*4*16*s, N*16*16*s
			block := 2*a1 + 2*a2 + 3*a3 + 20*4*cs
			return stem + block + N*16*s + N*5*s // pooled features, logits
		}},
		{"small resnet", func(b *nn.Builder) nn.Layer {
			r, err := nn.SmallResNet(b, "r", nn.ResNetConfig{InChannels: 1})
			if err != nil {
				panic(err)
			}
			return r
		}, []int{2, 1, 28, 28}, 0, true, func(s, cs int64) int64 {
			const N = 2
			a0, a1, a2, a3 := N*16*784*s, N*16*784*s, N*32*196*s, N*64*49*s
			stem := 2*a0 + 2*16*cs
			blocks := (4*a1 + 4*16*cs) + (5*a2 + 6*32*cs) + (5*a3 + 6*64*cs)
			return stem + blocks + N*64*s + N*10*s
		}},
		{"gpt", gpt(false), []int{2, 5}, 11, true, gptWant},
		{"gpt shared", gpt(true), []int{2, 5}, 11, true, gptWant},
		{"gpt eval", gpt(false), []int{2, 5}, 11, false, gptWant},
	}
}

// TestActivationFormulas checks every layer's documented activation bytes
// exactly — what its forward leaves allocated as Activation, its output
// included and its input not — on cpu and meta in F32 and on cpu in F64,
// with and without an input that requires grad; that cpu and meta account
// identically; and that after backward and Release only parameters and
// their gradients remain.
func TestActivationFormulas(t *testing.T) {
	for _, tc := range memCases() {
		t.Run(tc.name, func(t *testing.T) {
			var peaks []int64
			for _, run := range []struct {
				dev  *device.Device
				dt   dtype.DType
				grad bool
			}{
				{cpu.New(0, device.Options{}), dtype.F32, false},
				{meta.New(0, device.Options{}), dtype.F32, false},
				{cpu.New(1, device.Options{}), dtype.F32, true},
				{meta.New(1, device.Options{}), dtype.F32, true},
				{cpu.New(2, device.Options{}), dtype.F64, true},
			} {
				dev := run.dev
				m := tc.build(nn.NewBuilder(dev, run.dt, 1))
				m.Train(tc.train)
				s := autograd.NewScope()
				var x *autograd.Tensor
				if tc.ints > 0 {
					x = s.FromInt64s(dev, tc.shape, randIdx(3, prod(tc.shape), tc.ints))
				} else {
					x = s.Full(dev, run.dt, 0.5, tc.shape...)
					if dev.Kernels() != nil {
						x.SetFloat64s(ramp(x.Len()))
					}
					x.SetRequiresGrad(run.grad && tc.ints == 0)
				}
				dev.ResetPeak()
				before := dev.Stats().ByTag[device.Activation].Current
				y := m.Forward(x)
				got := dev.Stats().ByTag[device.Activation].Current - before
				sz, cs := int64(run.dt.Size()), int64(4)
				if run.dt == dtype.F64 {
					cs = 8
				}
				if want := tc.want(sz, cs); got != want {
					t.Errorf("%s %s (input grad %v): forward leaves %d activation bytes, want %d", dev.Kind(), run.dt, run.grad, got, want)
				}
				peaks = append(peaks, dev.Stats().ByTag[device.Activation].Peak)
				if y.RequiresGrad() { // not for dropout on an input without grad
					if err := y.Sum(false).Backward(); err != nil {
						t.Fatal(err)
					}
				}
				s.Release()
				if leaks := dev.Leaks(device.Parameter, device.Gradient); len(leaks) != 0 {
					t.Errorf("%s: after the step: %v", dev.Kind(), leaks)
				}
				nn.Release(m)
				if got := dev.CurrentBytes(); got != 0 {
					t.Errorf("%s: %d bytes remain after Release: %v", dev.Kind(), got, dev.Live())
				}
			}
			if peaks[0] != peaks[1] || peaks[2] != peaks[3] {
				t.Errorf("activation peaks cpu/meta: %d/%d and %d/%d, want equal", peaks[0], peaks[1], peaks[2], peaks[3])
			}
		})
	}
}

func prod(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// ramp returns n distinct values in [-1, 1].
func ramp(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = -1 + 2*float64((i*7)%n)/float64(max(n-1, 1))
	}
	return v
}
