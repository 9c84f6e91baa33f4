package checkpoint_test

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// selectiveEach runs every layer in its own Selective region.
func selectiveEach(layers []nn.Layer, pol *checkpoint.Policy) func(*autograd.Tensor) *autograd.Tensor {
	return func(x *autograd.Tensor) *autograd.Tensor { return checkpoint.SelectiveEach(layers, pol, x) }
}

// sameBits fails unless every gradient and buffer is bit-identical.
func sameBits(t *testing.T, what string, l1, l2 float64, g1, g2 [][]float64) {
	t.Helper()
	if l1 != l2 {
		t.Errorf("%s: loss %v, plain %v", what, l2, l1)
	}
	for i := range g1 {
		for j := range g1[i] {
			if g1[i][j] != g2[i][j] {
				t.Fatalf("%s: gradient/buffer %d[%d] = %v, plain %v (must be identical)", what, i, j, g2[i][j], g1[i][j])
			}
		}
	}
}

func TestSelectiveGradientsEqualPlainExactly(t *testing.T) {
	cases := []struct {
		dt, ac dtype.DType
		bn     bool
	}{{dtype.F64, dtype.Invalid, false}, {dtype.F64, dtype.Invalid, true}, {dtype.F32, dtype.Invalid, false},
		{dtype.F32, dtype.Invalid, true}, {dtype.F32, dtype.BF16, false}}
	for _, c := range cases {
		dev := cpu.New(0, device.Options{})
		plain := newModel(dev, c.dt, 4, 6, c.bn)
		sel := newModel(dev, c.dt, 4, 6, c.bn)
		l1, g1, p1 := step(t, dev, plain, 0, c.dt, c.ac)
		l2, g2, _ := stepWith(t, dev, sel, c.dt, c.ac, selectiveEach(sel.layers, nil))
		sameBits(t, c.dt.String()+" autocast "+c.ac.String(), l1, l2, g1, g2)
		// This block's two Linear outputs are most of what plain saves, so
		// only SavedOnly, which drops the second, is sure to save memory.
		lean := &checkpoint.Policy{Save: checkpoint.DefaultPolicy().Save, SavedOnly: true}
		sel2 := newModel(dev, c.dt, 4, 6, c.bn)
		l3, g3, p3 := stepWith(t, dev, sel2, c.dt, c.ac, selectiveEach(sel2.layers, lean))
		sameBits(t, c.dt.String()+" autocast "+c.ac.String()+" saved-only", l1, l3, g1, g3)
		if p3 >= p1 {
			t.Errorf("%s bn=%v: saved-only selective activation peak %d B, plain %d B: want less", c.dt, c.bn, p3, p1)
		}
		plain.release()
		sel.release()
		sel2.release()
		if dev.LiveBlocks() != 0 {
			t.Fatalf("leak: %v", dev.Live())
		}
	}
}

// TestSelectiveKeepsMatmulOutputs checks the forward's activation bytes in
// closed form: per block the output (batch×width), the first Linear's
// output (batch×2·width), which GELU saves, and the second Linear's
// (batch×width), which only the residual add reads, unless SavedOnly; the
// dropout output and GELU's output are dropped.
func TestSelectiveKeepsMatmulOutputs(t *testing.T) {
	const n, width, batch = 3, 16, 8 // as keepsMatmulOutputs builds
	for _, dt := range []dtype.DType{dtype.F32, dtype.F64} {
		for _, savedOnly := range []bool{false, true} {
			pol := &checkpoint.Policy{Save: checkpoint.DefaultPolicy().Save, SavedOnly: savedOnly}
			second := batch * width
			if savedOnly {
				second = 0
			}
			keepsMatmulOutputs(t, dt, pol, int64(n*(batch*width+batch*2*width+second)*dt.Size()))
		}
	}
}

// keepsMatmulOutputs checks that a Selective forward under pol of 3 blocks
// of width 16 at batch 8 holds want activation bytes.
func keepsMatmulOutputs(t *testing.T, dt dtype.DType, pol *checkpoint.Policy, want int64) {
	t.Helper()
	const n, width, batch = 3, 16, 8
	dev := meta.New(0, device.Options{})
	m := newModel(dev, dt, n, width, false)
	s := autograd.NewScope()
	x := s.Full(dev, dt, 0.5, batch, width)
	before := dev.Stats().ByTag[device.Activation].Current
	y := selectiveEach(m.layers, pol)(x)
	got := dev.Stats().ByTag[device.Activation].Current - before
	if got != want {
		t.Errorf("%s saved-only %v: forward holds %d B of activations, want %d B (outputs + kept linear outputs)", dt, pol.SavedOnly, got, want)
	}
	if err := y.Sum(false).Backward(); err != nil {
		t.Fatal(err)
	}
	s.Release()
	m.release()
	if dev.LiveBlocks() != 0 {
		t.Fatalf("leak: %v", dev.Live())
	}
}

// TestSelectiveNNBlocksMatchExactly: ResNet blocks (batch-norm in
// training) and GPT blocks (attention, dropout on) give bit-identical
// losses, gradients and running statistics with and without Selective.
func TestSelectiveNNBlocksMatchExactly(t *testing.T) {
	for _, c := range stackCases {
		for _, dt := range []dtype.DType{dtype.F64, dtype.F32} {
			plain := runStack(t, c, dt, 0)
			got := runStack(t, c, dt, -1)
			for i := range plain {
				if math.Float64bits(plain[i]) != math.Float64bits(got[i]) {
					t.Fatalf("%s %s selective: value %d = %v, plain %v", c.name, dt, i, got[i], plain[i])
				}
			}
		}
	}
}
