package lora

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/quant"
)

// Merge adds every adapter's update into its base weight, W ← W +
// Scale·B·A (computed in the weight's dtype), releases the adapters and
// returns the base nn.GPT, trainable again, for inference or saving with
// nn.Save: its outputs are the adapted model's (to rounding). m is unusable
// afterwards. An Int8 base is first dequantised into new F32 block Linears
// (W = q·s, the INT8 tensors released: the merged model is F32, as PEFT's
// merge of a QLoRA model is a float one). Memory: one Out·In temporary of
// the weight's dtype at a time, and with an Int8 base the F32 weights
// (4·P_L bytes) while the INT8 ones (P_L + 4·Σ Out) are released layer by
// layer. An error (memory) leaves an Int8 base partly dequantised; release
// m then.
func (m *GPT) Merge() (*nn.GPT, error) {
	if m.merged {
		return nil, fmt.Errorf("lora.Merge %s: already merged", m.Base.Name)
	}
	err := autograd.Try(func() {
		if m.Config.Base == Int8 {
			m.dequantise()
		}
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

// dequantise replaces every block's INT8 Linears by F32 nn.Linears with
// the dequantised weights, in the nn.GPTBlock's own Linear structs, and
// points the slots (or their adapters' bases) at them.
func (m *GPT) dequantise() {
	seen := map[*Block]bool{}
	for _, bl := range m.Blocks {
		if seen[bl] {
			continue
		}
		seen[bl] = true
		k := bl.K
		slots := []*nn.Layer{&bl.Attn, &bl.AttnProj, &bl.FC, &bl.Proj}
		for i, l := range []*nn.Linear{k.Attn.Attn, k.Attn.Proj, k.MLP.FC, k.MLP.Proj} {
			at := slots[i]
			if a, ok := (*at).(*Linear); ok {
				at = &a.Base
			}
			if q, ok := (*at).(*quant.FrozenLinear); ok {
				dequantInto(l, q)
				nn.Release(q)
				*at = l
			}
		}
	}
}

// dequantInto gives l new F32 tensors holding q's weight q·s and bias.
func dequantInto(l *nn.Linear, q *quant.FrozenLinear) {
	s := autograd.NewScope()
	defer s.Release()
	dev := q.Weight.Device()
	w := autograd.Param(dev, dtype.F32, l.Name+".weight", l.Out, l.In)
	var b *autograd.Tensor
	if q.Bias != nil {
		b = autograd.Param(dev, dtype.F32, l.Name+".bias", l.Out)
	}
	s.NoGrad(func() {
		w.CopyFrom(s.Use(q.Weight).Cast(dtype.F32).Mul(s.Use(q.WeightScale).Unsqueeze(1)))
		if b != nil {
			b.CopyFrom(s.Use(q.Bias))
		}
	})
	l.Weight, l.Bias = w, b
}

// merge adds Scale·B·A into the base weight.
func (l *Linear) merge() {
	w := l.Base.(*nn.Linear).Weight
	s := autograd.NewScope()
	defer s.Release()
	s.NoGrad(func() {
		at := s.Use(l.A).T()                                    // (In, Rank)
		ba := l.spread(autograd.Linear(s.Use(l.B), at, nil), 0) // B·A: (Out, In)
		sum := s.Use(w).Add(ba.Scale(l.Scale).Cast(w.DType()))
		w.CopyFrom(sum)
	})
}
