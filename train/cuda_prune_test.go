package train_test

import (
	"reflect"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/prune"
)

// pruneRig prunes a rig's model as the examples do (half of each group:
// the ResNet's inner channels, the GPT's heads and MLP hidden units),
// ranked by by (for Taylor, from the gradients of one backward on the
// rig's next micro-batch), and gives it a new optimizer, the old one's
// state being for the old tensors. Afterwards no parameter has a gradient.
func pruneRig(t *testing.T, r *rig, by prune.Criterion) prune.Report {
	t.Helper()
	if by == prune.Taylor {
		s := autograd.NewScope()
		if err := s.Run(func() error { return r.fwd(s, 0).Backward() }); err != nil {
			t.Fatalf("%s: the backward for Taylor ranking: %v", r.dev, err)
		}
	}
	var rep prune.Report
	var err error
	o := prune.Options{By: by, Height: 8, Width: 8}
	switch m := r.model.(type) {
	case *nn.GPT:
		rep, err = prune.GPT(m, 0.5, 0.5, o)
	case *nn.ResNet:
		rep, err = prune.ResNet(m, 0.5, o)
	}
	if err != nil {
		t.Fatalf("%s: pruning: %v", r.dev, err)
	}
	for _, p := range r.model.Params() {
		if p.T.Grad() != nil {
			t.Errorf("%s: after pruning %s has a gradient", r.dev, p.Name)
		}
	}
	r.opt.Release()
	if r.opt, err = optim.NewAdamW(r.model.Params(), optim.AdamConfig{LR: 0.01}); err != nil {
		t.Fatal(err)
	}
	r.st.Opt = r.opt
	return rep
}

// pruneTol bounds cuda's fine-tuned values against cpu's, relative to the
// largest |value| of each tensor: the emulated runs part by at most
// 2.9e-5 (the GPT pruned by Taylor; see the log), above cudaTolF32: Adam
// turns a gradient difference δ into an update difference of about
// lr·δ/|g|, and the fresh AdamW of the fine-tuning, with no history to
// average over, does so most for the elements whose gradient is near zero
// after pruning; 1e-4 leaves 3.5× over the worst, as device/cuda's
// training tests do.
const pruneTol = 1e-4

// TestPruneOnCUDA trains each model two steps on cuda, cpu and meta,
// prunes it (by L1 norm, and by Taylor's |w·∂L/∂w| from the gradients of
// one more backward) and fine-tunes two more: cuda ranks the channels as
// cpu does
// (the same report, kept indices included) and its fine-tuned parameters
// and optimizer state agree with cpu's; its Stats equal meta's plus the
// workspace after pruning (old and new tensors both made, the old
// released) and after every step; the parameter tag holds the pruned
// model's bytes, and the shapes stay pruned, through the fine-tuning.
func TestPruneOnCUDA(t *testing.T) {
	for _, tc := range []struct {
		model string
		by    prune.Criterion
	}{{"gpt", prune.L1}, {"gpt", prune.Taylor}, {"resnet", prune.L1}, {"resnet", prune.Taylor}} {
		t.Run(tc.model+" "+tc.by.String(), func(t *testing.T) {
			tr := newTrio(t, technique{name: tc.model, c: setup{model: tc.model}})
			for range 2 {
				tr.step(t, cudaTolF32)
			}
			rc, rg, rm := pruneRig(t, tr.cpu, tc.by), pruneRig(t, tr.cuda, tc.by), pruneRig(t, tr.meta, tc.by)
			if !reflect.DeepEqual(rc, rg) {
				t.Errorf("pruning on cuda reported\n%+v\nwant cpu's\n%+v", rg, rc)
			}
			if rm.ParamsAfter != rg.ParamsAfter || rm.BytesAfter != rg.BytesAfter {
				t.Errorf("pruning on meta leaves %d parameters, %d B; cuda %d, %d B", rm.ParamsAfter, rm.BytesAfter, rg.ParamsAfter, rg.BytesAfter)
			}
			if rg.BytesAfter >= rg.BytesBefore {
				t.Errorf("pruning on cuda: %d parameter bytes after, %d before: nothing removed", rg.BytesAfter, rg.BytesBefore)
			}
			cudatest.SameStats(t, "after pruning", tr.meta.dev.Stats(), tr.cuda.dev.Stats(), tr.ws)
			for range 2 {
				tr.step(t, cudaTolF32)
			}
			worst := closeValues(t, "after fine-tuning", tr.cpu.values(), tr.cuda.values(), pruneTol)
			if got := tr.cuda.dev.Stats().ByTag[device.Parameter].Current; got != rg.BytesAfter || nn.ParamBytes(tr.cuda.model) != rg.BytesAfter {
				t.Errorf("after fine-tuning the parameter tag holds %d B, the model %d B; want the pruned model's %d B", got, nn.ParamBytes(tr.cuda.model), rg.BytesAfter)
			}
			t.Logf("parameter bytes %d → %d; worst |Δ|/max|cpu| after fine-tuning %.3g", rg.BytesBefore, rg.BytesAfter, worst)
		})
	}
}
