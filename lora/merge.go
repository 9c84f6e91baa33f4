package lora

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// Merge adds every adapter's update into its base weight, W ← W +
// Scale·B·A (computed in the weight's dtype), releases the adapters and
// returns the base nn.GPT, trainable again, for inference or saving with
// nn.Save: its outputs are the adapted model's (to rounding). m is unusable
// afterwards. An Int8 base cannot be merged (its weights are quantized:
// requantizing W + Scale·B·A would lose the update's small values); that
// returns an error and changes nothing. Memory: one Out·In temporary of the
// weight's dtype at a time.
func (m *GPT) Merge() (*nn.GPT, error) {
	if m.merged {
		return nil, fmt.Errorf("lora.Merge %s: already merged", m.Base.Name)
	}
	if m.Config.Base == Int8 {
		return nil, fmt.Errorf("lora.Merge %s: the base is int8; merging needs a float base (apply LoRA to the float model to merge, or keep the adapters apart with SaveAdapters)", m.Base.Name)
	}
	err := autograd.Try(func() {
		for _, a := range m.Adapters {
			a.merge()
		}
	})
	if err != nil {
		return nil, fmt.Errorf("lora.Merge %s: %w", m.Base.Name, err)
	}
	for _, a := range m.Adapters {
		a.A.Release()
		a.B.Release()
	}
	for _, p := range m.Base.Params() {
		if !p.Buffer && p.T.IsLeaf() {
			p.T.SetRequiresGrad(true)
		}
	}
	m.merged = true
	return m.Base, nil
}

// merge adds Scale·B·A into the base weight.
func (l *Linear) merge() {
	w := l.Base.(*nn.Linear).Weight
	s := autograd.NewScope()
	defer s.Release()
	s.NoGrad(func() {
		at := s.Use(l.A).T()                       // (In, Rank)
		ba := autograd.Linear(s.Use(l.B), at, nil) // B·A: (Out, In)
		sum := s.Use(w).Add(ba.Scale(l.Scale).Cast(w.DType()))
		w.CopyFrom(sum)
	})
}
