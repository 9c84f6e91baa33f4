package nn_test

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// materializedBlock returns a GPT block of width 8 with 2 heads whose
// attention is materialized (or fused), its parameters filled from seed 2.
func materializedBlock(b *nn.Builder, materialize bool, dropout float64, gen *autograd.Generator) *nn.GPTBlock {
	cfg := nn.GPTConfig{Width: 8, Heads: 2, Layers: 2, Bias: true, Dropout: dropout, MaterializedAttention: materialize}
	k := nn.NewGPTBlock(b, "h.0", cfg, gen)
	fill(k, 2, -0.5, 0.5)
	return k
}

// TestMaterializedAttentionGrad checks the materialized block's gradients
// (input and every parameter) by central differences, without dropout and
// with attention and residual dropout 0.3 (each evaluation restores the
// generator, so every one draws the same masks).
func TestMaterializedAttentionGrad(t *testing.T) {
	for _, p := range []float64{0, 0.3} {
		dev, b := f64(1)
		gen := autograd.NewGenerator(11)
		k := materializedBlock(b, true, p, gen)
		if k.Attn.Core == nil || k.Attn.Core.Drop == nil || k.Attn.Core.Drop.P != p {
			t.Fatalf("dropout %g: attention core %+v: want materialized with attn_dropout %g", p, k.Attn.Core, p)
		}
		x := randInput(dev, 2, 2, 5, 8)
		st := gen.State()
		gradcheck(t, k, x, func(_ *autograd.Scope, x *autograd.Tensor) *autograd.Tensor {
			gen.SetState(st)
			return k.Forward(x)
		})
		x.Release()
		nn.Release(k)
	}
}

// TestMaterializedAttentionMatchesFused checks that without dropout the
// materialized block computes what the fused one does (F64, to 1e-12),
// causal masking included, and that attention dropout acts in training
// only.
func TestMaterializedAttentionMatchesFused(t *testing.T) {
	dev, b := f64(1)
	fused := materializedBlock(b, false, 0, nil)
	defer nn.Release(fused)
	gen := autograd.NewGenerator(5)
	mat := materializedBlock(b, true, 0.25, gen)
	defer nn.Release(mat)
	x := randInput(dev, 4, 3, 6, 8)
	defer x.Release()
	run := func(k *nn.GPTBlock, train bool) []float64 {
		k.Train(train)
		s := autograd.NewScope()
		defer s.Release()
		return k.Forward(s.Use(x)).Float64s()
	}
	want, got := run(fused, false), run(mat, false)
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("eval output %d: materialized %.17g, fused %.17g: want equal to 1e-12", i, got[i], want[i])
		}
	}
	if dropped := run(mat, true); equalF(dropped, want) {
		t.Errorf("training with attention dropout 0.25 gave the eval output: want the dropout applied")
	}
}

// TestGPTSelectiveFLOPs: GPT-2 small's block at batch 8 × 1024 counts
// 2·8192·12·768² FLOPs of Linears plus 4·8·1024²·768 of attention
// products; selective recomputation reruns the latter only when the
// attention is materialized.
func TestGPTSelectiveFLOPs(t *testing.T) {
	cfg := nn.GPTConfig{Vocab: 50257, Context: 1024, Layers: 12, Heads: 12, Width: 768}
	attn := int64(4 * 8 * 1024 * 1024 * 768)
	if got, want := cfg.BlockFLOPs(8, 1024), int64(2*8192*12*768*768)+attn; got != want {
		t.Errorf("block FLOPs %d, want %d", got, want)
	}
	if got := cfg.SelectiveFLOPs(8, 1024); got != 0 {
		t.Errorf("fused attention: selective reruns %d FLOPs, want 0", got)
	}
	cfg.MaterializedAttention = true
	if got := cfg.SelectiveFLOPs(8, 1024); got != attn {
		t.Errorf("materialized attention: selective reruns %d FLOPs, want %d", got, attn)
	}
}
