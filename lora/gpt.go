package lora

import (
	"fmt"
	"strings"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/quant"
)

// GPT is an nn.GPT with frozen weights and low-rank adapters on the block
// Linears Config.Targets names. It owns the nn.GPT it was applied to:
// release it with nn.Release (the GPT's own handles then go too).
type GPT struct {
	Base   *nn.GPT
	Config Config
	Blocks []*Block
	// Adapters lists the adapters in block order (a shared block's once).
	Adapters []*Linear
	merged   bool
}

// Block is one of the base's blocks with its four Linears as slots: the
// base's own (float, frozen), a quant.FrozenLinear (Int8 base), or an
// adapter over either.
type Block struct {
	K                    *nn.GPTBlock
	Attn, AttnProj       nn.Layer // attn.c_attn, attn.c_proj
	FC, Proj             nn.Layer // mlp.c_fc, mlp.c_proj
	heads, d, c          int
	attnName, mlpName    string
	attnDrop, mlpDropout *nn.Dropout
	core                 *nn.MaterializedAttention // the base's; nil: fused
}

// Apply freezes g (no parameter of it requires a gradient any more),
// stores its block Linears as cfg.Base says (Int8: quantized, the float
// weights released) and puts adapters on the targeted ones. gen draws the
// adapters' dropout masks (nil allowed without dropout). The result owns
// g. A bad cfg, a released g or running out of memory returns an error
// and leaves g as it was (with an Int8 base, an error after quantizing
// has begun leaves g partly quantized and frozen: release it).
func Apply(g *nn.GPT, cfg Config, gen *autograd.Generator) (*GPT, error) {
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("lora.Apply: %w", err)
	}
	if cfg.Dropout > 0 && gen == nil {
		return nil, fmt.Errorf("lora.Apply: dropout %g with a nil generator", cfg.Dropout)
	}
	if len(g.Blocks) == 0 || g.Wte == nil || g.Wte.Weight.Released() {
		return nil, fmt.Errorf("lora.Apply %s: the model has no blocks or was released", g.Name)
	}
	targets, _ := cfg.Modules()
	m := &GPT{Base: g, Config: cfg}
	dt := g.Wte.Weight.DType()
	if cfg.Base == Int8 {
		dt = dtype.F32
	}
	b := nn.NewBuilder(g.Wte.Weight.Device(), dt, cfg.Seed)
	err := autograd.Try(func() {
		seen := map[*nn.GPTBlock]*Block{}
		for _, k := range g.Blocks {
			if seen[k] == nil {
				seen[k] = m.adapt(b, k, targets, gen)
			}
			m.Blocks = append(m.Blocks, seen[k])
		}
	})
	if err != nil {
		for _, a := range m.Adapters {
			a.A.Release()
			a.B.Release()
		}
		return nil, fmt.Errorf("lora.Apply %s: %w", g.Name, err)
	}
	for _, p := range g.Params() {
		if !p.T.Released() && p.T.IsLeaf() && p.T.DType().IsFloat() {
			p.T.SetRequiresGrad(false)
		}
	}
	return m, nil
}

// adapt builds the Block of k.
func (m *GPT) adapt(b *nn.Builder, k *nn.GPTBlock, targets []string, gen *autograd.Generator) *Block {
	a, f := k.Attn, k.MLP
	bl := &Block{K: k, heads: a.Heads, d: a.Attn.Out / (3 * a.Heads), c: a.C, attnName: a.Name, mlpName: f.Name,
		attnDrop: a.Drop, mlpDropout: f.Drop, core: a.Core}
	slot := func(l *nn.Linear, module string) nn.Layer {
		var base nn.Layer = l
		if m.Config.Base == Int8 {
			q, err := quant.Freeze(l)
			if err != nil {
				panic(&autograd.Error{Op: "lora.apply", Msg: err.Error()})
			}
			nn.Release(l)
			base = q
		}
		if !contains(targets, module) {
			return base
		}
		var drop *nn.Dropout
		if m.Config.Dropout > 0 {
			drop = nn.NewDropout(nil, l.Name+".lora_dropout", m.Config.Dropout, gen)
		}
		parts := [3]bool{true, true, true}
		if module == Modules[0] {
			parts = m.Config.parts()
		}
		ad := newLinear(b, l.Name, base, l.In, l.Out, m.Config, drop, parts)
		m.Adapters = append(m.Adapters, ad)
		return ad
	}
	bl.Attn, bl.AttnProj = slot(a.Attn, Modules[0]), slot(a.Proj, Modules[1])
	bl.FC, bl.Proj = slot(f.FC, Modules[2]), slot(f.Proj, Modules[3])
	return bl
}

func contains(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

// Forward returns the block applied to x (B, T, C): nn's block forward
// over these slots.
func (bl *Block) Forward(x *autograd.Tensor) *autograd.Tensor {
	k := bl.K
	return nn.BlockForward(k.Name, x, k.LN1.Forward, bl.attention, k.LN2.Forward, bl.mlp)
}

func (bl *Block) attention(x *autograd.Tensor) *autograd.Tensor {
	return nn.SelfAttention(bl.attnName, x, bl.c, bl.heads, bl.d, bl.Attn, bl.AttnProj, bl.attnDrop, bl.core)
}

func (bl *Block) mlp(x *autograd.Tensor) *autograd.Tensor {
	return nn.FeedForward(bl.mlpName, x, bl.FC, bl.Proj, bl.mlpDropout)
}

// Params returns the layer norms' params (frozen) and the slots'.
func (bl *Block) Params() []nn.Param {
	ps := append(frozen(bl.K.LN1), frozen(bl.K.LN2)...)
	for _, l := range bl.slots() {
		if a, ok := l.(*Linear); ok {
			ps = append(ps, a.Params()...)
		} else {
			ps = append(ps, frozen(l)...)
		}
	}
	return ps
}

func (bl *Block) slots() []nn.Layer { return []nn.Layer{bl.Attn, bl.AttnProj, bl.FC, bl.Proj} }

// Train switches the block's dropouts and its adapters'.
func (bl *Block) Train(on bool) {
	bl.K.Train(on)
	for _, l := range bl.slots() {
		l.Train(on)
	}
}

// Layers returns the parts the forward runs: the base's embeddings, layer
// norms and head around these blocks.
func (m *GPT) Layers() nn.GPTLayers {
	g := m.Base
	ls := make([]nn.Layer, len(m.Blocks))
	for i, k := range m.Blocks {
		ls[i] = k
	}
	l := nn.GPTLayers{Name: g.Name, Context: g.Config.Context, Wte: g.Wte, Wpe: g.Wpe, Drop: g.Drop, Blocks: ls,
		RunBlocks: g.RunBlocks, LNF: g.LNF}
	if g.Head != nil {
		l.Head = g.Head
	}
	return l
}

// Forward returns the logits (B, T, Vocab) of idx (B, T), as nn.GPT's.
func (m *GPT) Forward(idx *autograd.Tensor) *autograd.Tensor {
	m.live("lora.gpt")
	return m.Layers().Forward("lora.gpt", idx)
}

// Loss returns the mean next-token cross-entropy, fused with the head when
// the base's FusedLoss is set (nn.GPTLayers.Loss).
func (m *GPT) Loss(idx, targets *autograd.Tensor) *autograd.Tensor {
	m.live("lora.gpt")
	return m.Layers().Loss("lora.gpt", idx, targets, m.Base.FusedLoss, autograd.LCEOptions{})
}

// live panics when the model was merged.
func (m *GPT) live(op string) {
	if m.merged {
		panic(&autograd.Error{Op: op, Msg: m.Base.Name + ": the adapters were merged into the base: use the nn.GPT Merge returned"})
	}
}

// Params returns the adapters' A and B first (the only trained params),
// then every tensor of the base, marked Buffer.
func (m *GPT) Params() []nn.Param {
	g := m.Base
	var ps []nn.Param
	for _, a := range m.Adapters {
		ps = append(ps, nn.Param{Name: a.A.Name(), T: a.A}, nn.Param{Name: a.B.Name(), T: a.B})
	}
	ps = append(ps, frozen(g.Wte)...)
	ps = append(ps, frozen(g.Wpe)...)
	seen := map[*Block]bool{}
	for _, k := range m.Blocks {
		if !seen[k] {
			seen[k] = true
			for _, p := range k.Params() {
				if p.Buffer {
					ps = append(ps, p)
				}
			}
		}
	}
	ps = append(ps, frozen(g.LNF)...)
	if g.Head != nil {
		ps = append(ps, frozen(g.Head)...)
	}
	return ps
}

// Train switches dropout, the base's and the adapters'.
func (m *GPT) Train(on bool) {
	m.Base.Train(on)
	for _, k := range m.Blocks {
		k.Train(on)
	}
}

// StepBuffers returns the buffers a training step writes: none (the base
// is frozen and a GPT has no running statistics). train.Stepper copies only
// these to the host before a step, not the whole base.
func (m *GPT) StepBuffers() []nn.Param { return nil }

// Trainable returns the adapters' params: what the optimizer steps
// (nn.Trainable(m) gives the same).
func (m *GPT) Trainable() []nn.Param { return nn.Trainable(m) }

// path returns a parameter's module path without the model's name: the
// path PEFT names it by.
func (m *GPT) path(name string) string {
	if m.Base.Name == "" {
		return name
	}
	return strings.TrimPrefix(name, m.Base.Name+".")
}
