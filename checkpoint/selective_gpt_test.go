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

// heldByBlock returns the activation bytes one GPT block of cfg leaves
// alive after its forward on x (b, cfg.Context, cfg.Width) in F32, the
// block's own output included, run plainly or in a Selective region under
// pol.
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
	cfg := nn.GPTConfig{Vocab: 16, Context: tt, Layers: 1, Heads: h, Width: c, Bias: true}
	lse := int64(b * h * tt * 4)
	checkBlockUnits(t, cfg, b, [3]int64{16, 10, 5}, [3]int64{lse + 4*b*tt*4, lse, lse})
}

// blockCase is one way heldByBlock runs a block: plainly, under
// DefaultPolicy, under LeanPolicy.
var blockCases = []struct {
	name      string
	pol       *checkpoint.Policy
	selective bool
}{{"plain", nil, false}, {"default", nil, true}, {"saved-only", checkpoint.LeanPolicy(), true}}

// checkBlockUnits checks that a block of cfg on batch b holds, in each of
// blockCases, units[i] units of B·T·C·4 bytes, its output and extra[i]
// bytes.
func checkBlockUnits(t *testing.T, cfg nn.GPTConfig, b int, units, extra [3]int64) {
	t.Helper()
	unit := int64(b * cfg.Context * cfg.Width * 4)
	for i, k := range blockCases {
		got := heldByBlock(t, cfg, b, k.pol, k.selective)
		if want := (units[i]+1)*unit + extra[i]; got != want {
			t.Errorf("%s (materialized %v): a block's forward holds %d B, want %d B (%d units of %d B, the output, %d B more)",
				k.name, cfg.MaterializedAttention, got, want, units[i], unit, extra[i])
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
	sq := int64(b * h * tt * tt * 4)
	checkBlockUnits(t, cfg, b, [3]int64{15, 9, 4}, [3]int64{2*sq + tt*tt*4 + 4*b*tt*4, 0, 0})
}
