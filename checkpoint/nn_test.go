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

// stackCase builds a stack of nn blocks and an input for it.
type stackCase struct {
	name  string
	build func(b *nn.Builder, gen *autograd.Generator) ([]nn.Layer, nn.Module)
	input []int
}

var stackCases = []stackCase{
	{"resnet_basic", func(b *nn.Builder, _ *autograd.Generator) ([]nn.Layer, nn.Module) {
		ls := []nn.Layer{nn.NewBasicBlock(b, "b0", 4, 4, 1), nn.NewBasicBlock(b, "b1", 4, 8, 2), nn.NewBasicBlock(b, "b2", 8, 8, 1)}
		return ls, nn.NewSequential(ls...)
	}, []int{2, 4, 6, 6}},
	{"resnet_bottleneck", func(b *nn.Builder, _ *autograd.Generator) ([]nn.Layer, nn.Module) {
		ls := []nn.Layer{nn.NewBottleneck(b, "b0", 8, 2, 1), nn.NewBottleneck(b, "b1", 8, 2, 2), nn.NewBottleneck(b, "b2", 8, 2, 1)}
		return ls, nn.NewSequential(ls...)
	}, []int{2, 8, 5, 5}},
	{"gpt_dropout", func(b *nn.Builder, gen *autograd.Generator) ([]nn.Layer, nn.Module) {
		cfg := nn.GPTConfig{Vocab: 16, Context: 8, Layers: 4, Heads: 2, Width: 8, Dropout: 0.2, Bias: true}
		var ls []nn.Layer
		for i := range 4 {
			ls = append(ls, nn.NewGPTBlock(b, "h"+string(rune('0'+i)), cfg, gen))
		}
		return ls, nn.NewSequential(ls...)
	}, []int{2, 8, 8}},
	{"gpt_materialized_dropout", func(b *nn.Builder, gen *autograd.Generator) ([]nn.Layer, nn.Module) {
		cfg := nn.GPTConfig{Vocab: 16, Context: 8, Layers: 3, Heads: 2, Width: 8, Dropout: 0.2, Bias: true, MaterializedAttention: true}
		var ls []nn.Layer
		for i := range 3 {
			ls = append(ls, nn.NewGPTBlock(b, "h"+string(rune('0'+i)), cfg, gen))
		}
		return ls, nn.NewSequential(ls...)
	}, []int{2, 8, 8}},
}

// runStack runs one training step of the stack (plain when segments is 0,
// each block in a Selective region when it is negative)
// and returns the loss, the gradients and the buffers (running statistics).
func runStack(t *testing.T, c stackCase, dt dtype.DType, segments int) []float64 {
	t.Helper()
	return runStackWith(t, c, dt, func(ls []nn.Layer, xs *autograd.Tensor) *autograd.Tensor {
		switch {
		case segments == 0:
			return nn.NewSequential(ls...).Forward(xs)
		case segments < 0: // each block selective
			return checkpoint.SelectiveEach(ls, nil, xs)
		}
		return checkpoint.Sequential(ls, segments, xs)
	})
}

// runStackWith is runStack with the stack run by fwd.
func runStackWith(t *testing.T, c stackCase, dt dtype.DType, fwd func([]nn.Layer, *autograd.Tensor) *autograd.Tensor) []float64 {
	t.Helper()
	dev := cpu.New(0, device.Options{})
	gen := autograd.NewGenerator(9)
	ls, m := c.build(nn.NewBuilder(dev, dt, 4), gen)
	defer nn.Release(m)
	n := 1
	for _, d := range c.input {
		n *= d
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = math.Sin(float64(i) * 0.7)
	}
	s := autograd.NewScope()
	defer s.Release()
	xs := s.FromFloat64s(dev, c.input, x).Cast(dt)
	h := fwd(ls, xs)
	loss := h.Pow(2).Mean(false)
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	out := []float64{loss.Item()}
	for _, p := range m.Params() {
		if p.Buffer {
			out = append(out, p.T.Float64s()...)
		} else {
			out = append(out, p.T.Grad().Float64s()...)
		}
	}
	return out
}

// TestCheckpointedNNBlocksMatchExactly: ResNet blocks (batch-norm in
// training) and GPT blocks (dropout on) give bit-identical losses,
// gradients and running statistics with and without checkpointing.
func TestCheckpointedNNBlocksMatchExactly(t *testing.T) {
	for _, c := range stackCases {
		for _, dt := range []dtype.DType{dtype.F64, dtype.F32} {
			plain := runStack(t, c, dt, 0)
			for _, seg := range []int{2, 3} {
				got := runStack(t, c, dt, seg)
				for i := range plain {
					if math.Float64bits(plain[i]) != math.Float64bits(got[i]) {
						t.Fatalf("%s %s, %d segments: value %d = %v, plain %v", c.name, dt, seg, i, got[i], plain[i])
					}
				}
			}
		}
	}
}
