package checkpoint_test

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// heldByGPTBlock returns the activation bytes one GPT block (width c,
// heads h, no dropout) leaves alive after its forward on x (b, t, c) in
// F32, the block's own output included, run plainly or in a Selective
// region under pol.
func heldByGPTBlock(t *testing.T, b, tt, c, h int, pol *checkpoint.Policy, selective bool) int64 {
	t.Helper()
	return heldByBlock(t, nn.GPTConfig{Vocab: 16, Context: tt, Layers: 1, Heads: h, Width: c, Bias: true}, b, pol, selective)
}

// heldByBlock is heldByGPTBlock for a block of configuration cfg.
func heldByBlock(t *testing.T, cfg nn.GPTConfig, b int, pol *checkpoint.Policy, selective bool) int64 {
	t.Helper()
	dev := meta.New(0, device.Options{})
	tt, c := cfg.Context, cfg.Width
	blk := nn.NewGPTBlock(nn.NewBuilder(dev, dtype.F32, 1), "h0", cfg, autograd.NewGenerator(1))
	defer nn.Release(blk)
	s := autograd.NewScope()
	defer s.Release()
	x := s.Full(dev, dtype.F32, 0.5, b, tt, c)
	x.SetRequiresGrad(true)
	before := dev.Stats().ByTag[device.Activation].Current
	var y *autograd.Tensor
	if selective {
		y = checkpoint.Selective(pol, func(in []*autograd.Tensor) []*autograd.Tensor {
			return []*autograd.Tensor{blk.Forward(in[0])}
		}, x)[0]
	} else {
		y = blk.Forward(x)
	}
	held := dev.Stats().ByTag[device.Activation].Current - before
	if err := y.Sum(false).Backward(); err != nil {
		t.Fatal(err)
	}
	return held
}

// TestSelectiveGPTBlockClosedForm: a GPT block's forward holds, in units
// of N·C·4 bytes for N = B·T tokens of width C in F32, beside its output
// (1 unit) and the H·N·4-byte log-sum-exp: plain 16 (ln_1's output, the
// q, k, v head copy 3, attention's output, its (B, T, C) copy, the
// residual, ln_2's output, c_fc 4, GELU 4) and both norms' mean and
// reciprocal deviation (4·N·4 bytes); DefaultPolicy 10 (c_attn 3,
// attention, attn.c_proj, c_fc 4, mlp.c_proj); SavedOnly 5 (attention,
// c_fc 4).
func TestSelectiveGPTBlockClosedForm(t *testing.T) {
	const b, tt, c, h = 2, 8, 16, 2
	unit, lse := int64(b*tt*c*4), int64(b*h*tt*4)
	lean := &checkpoint.Policy{Save: checkpoint.DefaultPolicy().Save, SavedOnly: true}
	for _, k := range []struct {
		name      string
		pol       *checkpoint.Policy
		selective bool
		units     int64
		extra     int64
	}{{"plain", nil, false, 16, 4 * b * tt * 4}, {"default", nil, true, 10, 0}, {"saved-only", lean, true, 5, 0}} {
		got := heldByGPTBlock(t, b, tt, c, h, k.pol, k.selective)
		if want := (k.units+1)*unit + lse + k.extra; got != want {
			t.Errorf("%s: a block's forward holds %d B, want %d B (%d units of %d B, the output, the log-sum-exp)", k.name, got, want, k.units, unit)
		}
	}
}

// TestSelectiveMaterializedGPTBlockClosedForm: with a materialized
// attention and dropout 0.1 a block holds, beside its output, plain 15
// units of N·C·4 bytes (the fused block's 16 without attention's output),
// two of B·H·T²·4 (the softmax's and the attention dropout's outputs), the
// (T, T) F32 mask and the norms' statistics; DefaultPolicy 9 units (c_attn
// 3, attn.c_proj, c_fc 4, mlp.c_proj) and no T² term: the core attention,
// products included (bmm), is recomputed, as Megatron's selective
// recomputation does; SavedOnly 4 (c_fc, saved by GELU).
func TestSelectiveMaterializedGPTBlockClosedForm(t *testing.T) {
	const b, tt, c, h = 2, 8, 16, 2
	cfg := nn.GPTConfig{Vocab: 16, Context: tt, Layers: 1, Heads: h, Width: c, Bias: true, Dropout: 0.1, MaterializedAttention: true}
	unit, sq := int64(b*tt*c*4), int64(b*h*tt*tt*4)
	for _, k := range []struct {
		name      string
		pol       *checkpoint.Policy
		selective bool
		units     int64
		extra     int64
	}{{"plain", nil, false, 15, 2*sq + tt*tt*4 + 4*b*tt*4}, {"default", nil, true, 9, 0}, {"saved-only", checkpoint.LeanPolicy(), true, 4, 0}} {
		got := heldByBlock(t, cfg, b, k.pol, k.selective)
		if want := (k.units+1)*unit + k.extra; got != want {
			t.Errorf("%s: a materialized block's forward holds %d B, want %d B (%d units of %d B, the output, %d B more)", k.name, got, want, k.units, unit, k.extra)
		}
	}
}
