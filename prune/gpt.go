package prune

import (
	"cmp"
	"fmt"

	"github.com/headroom-ml/headroom/nn"
)

// GPT removes a heads fraction of the attention heads and an mlp fraction
// of the MLP hidden units of every block of g — KeepCount(H, heads) heads
// and KeepCount(Hidden, mlp) units remain — ranked by o.By, and returns
// what it removed. The residual stream (width C, the embeddings, layer
// norms, ln_f and the head) is untouched.
//
//   - A head h of D = C/H features owns rows h·D…h·D+D−1 of each of the q,
//     k and v parts of c_attn's weight (3·H·D, C) and bias, and the same
//     columns of attn.c_proj's weight (C, H·D). Heads are ranked by their
//     q, k and v rows together. The attention's Heads becomes the number
//     kept; its head width D stays, so H·D < C afterwards (nn's attention
//     takes D from c_attn's size).
//   - A hidden unit j owns row j of c_fc's weight (Hidden, C) and bias and
//     column j of mlp.c_proj's weight (C, Hidden); units are ranked by
//     c_fc's rows. The MLP's Hidden becomes the number kept.
//
// g.Config keeps the sizes g was built with; the modules hold the pruned
// ones. A block shared by all layers (ShareLayers) is pruned once.
// Everything ResNet says about names, saving, optimizers, memory and
// errors holds here too.
func GPT(g *nn.GPT, heads, mlp float64, o Options) (Report, error) {
	const op = "prune.GPT"
	if g == nil {
		return Report{}, fmt.Errorf("%s: nil model", op)
	}
	if err := checkFraction("heads fraction", heads); err != nil {
		return Report{}, fmt.Errorf("%s: %w", where(op, g.Name), err)
	}
	if err := checkFraction("mlp fraction", mlp); err != nil {
		return Report{}, fmt.Errorf("%s: %w", where(op, g.Name), err)
	}
	if err := checkCriterion(o.By); err != nil {
		return Report{}, fmt.Errorf("%s: %w", where(op, g.Name), err)
	}
	t := cmp.Or(o.Tokens, g.Config.Context)
	flops, err := GPTFLOPs(g, t)
	if err != nil {
		return Report{}, fmt.Errorf("%s: %w", op, err)
	}
	rep := Report{ParamsBefore: nn.Count(g), BytesBefore: nn.ParamBytes(g), FLOPsBefore: flops, Input: []int{t}}
	p := newPlan()
	seen := map[*nn.GPTBlock]bool{}
	for _, k := range g.Blocks {
		if seen[k] {
			continue
		}
		seen[k] = true
		if err := p.heads(k.Attn, heads, o.By); err != nil {
			return Report{}, fmt.Errorf("%s: %w", where(op, g.Name), err)
		}
		if err := p.hidden(k.MLP, mlp, o.By); err != nil {
			return Report{}, fmt.Errorf("%s: %w", where(op, g.Name), err)
		}
	}
	if err := p.apply(); err != nil {
		return Report{}, fmt.Errorf("%s: %w", where(op, g.Name), err)
	}
	nn.ZeroGrad(g)
	rep.ParamsAfter, rep.BytesAfter, rep.Layers = nn.Count(g), nn.ParamBytes(g), p.layers
	rep.FLOPsAfter, _ = GPTFLOPs(g, t) // t was checked above
	return rep, nil
}

// heads plans the removal of a's lowest-ranked heads.
func (p *plan) heads(a *nn.CausalSelfAttention, fraction float64, by Criterion) error {
	if a == nil || a.Attn == nil || a.Proj == nil {
		return fmt.Errorf("an attention with a missing layer")
	}
	H := a.Heads
	if H <= 0 || a.Attn.Out%(3*H) != 0 {
		return fmt.Errorf("%s: c_attn with %d outputs for %d heads: want 3·heads·D", a.Name, a.Attn.Out, H)
	}
	D := a.Attn.Out / (3 * H)
	if err := checkSame(a.Name+" c_attn rows, c_attn outputs/3 and c_proj inputs", H*D, a.Attn.Weight.Dim(0)/3, a.Proj.In, a.Proj.Weight.Dim(1)); err != nil {
		return err
	}
	rows, err := scores(a.Attn.Weight, by)
	if err != nil {
		return fmt.Errorf("%s: %w", a.Attn.Name, err)
	}
	s := make([]float64, H)
	for part := range 3 { // q, k, v
		for h := range H {
			for d := range D {
				s[h] += rows[part*H*D+h*D+d]
			}
		}
	}
	k := KeepCount(H, fraction)
	keep := Top(s, k)
	p.layers = append(p.layers, LayerReport{Name: a.Name, Unit: "heads", Before: H, After: k, Kept: keep})
	if k == H {
		return nil
	}
	var qkv, cols []int
	for part := range 3 {
		for _, h := range keep {
			for d := range D {
				qkv = append(qkv, part*H*D+h*D+d)
			}
		}
	}
	for _, h := range keep {
		for d := range D {
			cols = append(cols, h*D+d)
		}
	}
	p.keep(&a.Attn.Weight, 0, qkv)
	p.keep(&a.Attn.Bias, 0, qkv)
	p.keep(&a.Proj.Weight, 1, cols)
	p.size(func() { a.Heads, a.Attn.Out, a.Proj.In = k, 3*k*D, k*D })
	return nil
}

// hidden plans the removal of m's lowest-ranked hidden units.
func (p *plan) hidden(m *nn.MLP, fraction float64, by Criterion) error {
	if m == nil || m.FC == nil || m.Proj == nil {
		return fmt.Errorf("an MLP with a missing layer")
	}
	n := m.Hidden
	if err := checkSame(m.Name+" hidden width, c_fc outputs and c_proj inputs", n, m.FC.Out, m.FC.Weight.Dim(0), m.Proj.In, m.Proj.Weight.Dim(1)); err != nil {
		return err
	}
	s, err := scores(m.FC.Weight, by)
	if err != nil {
		return fmt.Errorf("%s: %w", m.FC.Name, err)
	}
	k := KeepCount(n, fraction)
	keep := Top(s, k)
	p.layers = append(p.layers, LayerReport{Name: m.Name, Unit: "hidden", Before: n, After: k, Kept: keep})
	if k == n {
		return nil
	}
	p.keep(&m.FC.Weight, 0, keep)
	p.keep(&m.FC.Bias, 0, keep)
	p.keep(&m.Proj.Weight, 1, keep)
	p.size(func() { m.Hidden, m.FC.Out, m.Proj.In = k, k, k })
	return nil
}
