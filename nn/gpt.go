package nn

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/autograd"
)

// GPTConfig describes a GPT-2-style decoder. Vocab, Context, Layers, Heads
// and Width are required; the zero value of every other field is its
// default: no dropout, no biases, untied embeddings, one block per layer.
// GPT-2 small is {Vocab: 50257, Context: 1024, Layers: 12, Heads: 12,
// Width: 768, Bias: true, TieEmbeddings: true}.
type GPTConfig struct {
	// Vocab is the number of tokens (V).
	Vocab int
	// Context is the longest sequence (the rows of the position table).
	Context int
	// Layers is the number of blocks (L).
	Layers int
	// Heads is the number of attention heads (H); it divides Width.
	Heads int
	// Width is the model width (C); the MLP's hidden width is 4·C.
	Width int
	// Dropout is the probability of the embedding, residual and MLP
	// dropouts, in [0, 1).
	Dropout float64
	// Bias gives the Linears and LayerNorms biases (GPT-2 has them).
	Bias bool
	// TieEmbeddings makes the LM head use the token embedding's table, with
	// no parameters of its own (GPT-2 does).
	TieEmbeddings bool
	// ShareLayers makes one block's weights serve all Layers layers
	// (ALBERT's cross-layer sharing): parameters are held once, gradients
	// of all layers accumulate into them. Activations are still per layer.
	ShareLayers bool
	// MaterializedAttention computes attention as GPT-2 and nanoGPT
	// without flash attention do (MaterializedAttention): the (B, H, T, T)
	// weights are stored, and dropped out with probability Dropout
	// (attn_dropout). Off (the default): the fused
	// autograd.ScaledDotProductAttention, which stores no T² matrix and
	// has no attention dropout.
	MaterializedAttention bool
}

// Check returns an error naming the first field out of range (what
// NewGPT checks first).
func (c GPTConfig) Check() error {
	switch {
	case c.Vocab <= 0 || c.Context <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.Width <= 0:
		return fmt.Errorf("vocab %d, context %d, layers %d, heads %d, width %d: want all > 0", c.Vocab, c.Context, c.Layers, c.Heads, c.Width)
	case c.Width%c.Heads != 0:
		return fmt.Errorf("width %d with %d heads: want the width divisible by the heads", c.Width, c.Heads)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("dropout %g: want 0 ≤ dropout < 1", c.Dropout)
	}
	return nil
}

// gpt2Std is GPT-2's initial standard deviation of Linear and embedding
// weights; residual projections use gpt2Std/√(2·Layers).
const gpt2Std = 0.02

// GPTBlock is one pre-LayerNorm transformer block: x + attn(ln_1(x)), then
// that plus mlp(ln_2(…)). Names follow nanoGPT: ln_1, attn, ln_2, mlp.
//
// Memory, for x (B, T, C) with H heads, hidden width 4·C, s the dtype's
// size and cs the LayerNorm and attention statistics' (4, or 8 for F64):
//   - parameters: (12·C² + 13·C)·s bytes with biases, (12·C² + 2·C)·s
//     without;
//   - forward leaves 17·B·T·C·s + 4·B·T·cs + B·H·T·cs bytes of activations:
//     ln_1's output and statistics (B·T·C·s + 2·B·T·cs), the attention's
//     5·B·T·C·s + B·H·T·cs (its result is released after the residual
//     add), the first residual sum (B·T·C·s, saved by ln_2), ln_2's output
//     and statistics (B·T·C·s + 2·B·T·cs), the MLP's 8·B·T·C·s (its result
//     released likewise) and the result (B·T·C·s). It saves x, alive
//     already. With MaterializedAttention: 16·B·T·C·s + 4·B·T·cs + 4·T²
//     bytes (no attention output and log-sum-exp; the F32 causal mask)
//     plus the softmax's B·H·T² output (F32 under autocast) and, when
//     Dropout > 0 or under autocast, the second product's B·H·T² operand
//     (the dropout's output, or its 16-bit cast).
type GPTBlock struct {
	Name string
	LN1  *LayerNorm
	Attn *CausalSelfAttention
	LN2  *LayerNorm
	MLP  *MLP
}

// NewGPTBlock makes one block of a GPT with configuration cfg (Width,
// Heads, Dropout, Bias; Layers, 0 meaning 1, scales the initialisation),
// initialised as
// GPT-2: Linear weights N(0, 0.02²), the residual projections' (attn.c_proj,
// mlp.c_proj) N(0, (0.02/√(2·Layers))²), biases 0, LayerNorm weights 1.
// gen supplies dropout masks; it may be nil when cfg.Dropout is 0.
func NewGPTBlock(b *Builder, name string, cfg GPTConfig, gen *autograd.Generator) *GPTBlock {
	if cfg.Layers <= 0 {
		cfg.Layers = 1
	}
	if cfg.Width <= 0 || cfg.Heads <= 0 || cfg.Width%cfg.Heads != 0 {
		fail("nn.gpt_block", "%s: width %d with %d heads: want a positive width divisible by the heads", name, cfg.Width, cfg.Heads)
	}
	c, ln := cfg.Width, LayerNormOptions{NoBias: !cfg.Bias}
	in, out := linearInit{gpt2Std}, linearInit{gpt2Std / math.Sqrt(2*float64(cfg.Layers))}
	k := &GPTBlock{Name: name}
	defer releaseOnPanic(k)
	k.LN1 = NewLayerNorm(b, join(name, "ln_1"), c, ln)
	k.Attn = newAttention(b, join(name, "attn"), c, cfg.Heads, cfg.Dropout, gen, cfg.Bias, cfg.MaterializedAttention, in, out)
	k.LN2 = NewLayerNorm(b, join(name, "ln_2"), c, ln)
	k.MLP = newMLP(b, join(name, "mlp"), c, 4*c, cfg.Dropout, gen, cfg.Bias, in, out)
	return k
}

// Forward returns the block applied to x (B, T, C).
func (k *GPTBlock) Forward(x *autograd.Tensor) *autograd.Tensor {
	return BlockForward(k.Name, x, k.LN1.Forward, k.Attn.Forward, k.LN2.Forward, k.MLP.Forward)
}

// Params returns ln_1's, attn's, ln_2's and mlp's parameters.
func (k *GPTBlock) Params() []Param {
	var ps []Param
	if k.LN1 != nil {
		ps = append(ps, k.LN1.Params()...)
	}
	if k.Attn != nil {
		ps = append(ps, k.Attn.Params()...)
	}
	if k.LN2 != nil {
		ps = append(ps, k.LN2.Params()...)
	}
	if k.MLP != nil {
		ps = append(ps, k.MLP.Params()...)
	}
	return ps
}

// Train switches the dropouts.
func (k *GPTBlock) Train(on bool) {
	if k.Attn != nil {
		k.Attn.Train(on)
	}
	if k.MLP != nil {
		k.MLP.Train(on)
	}
}

// GPT is a GPT-2-style language model: token and position embeddings,
// dropout, Layers blocks, a final LayerNorm and the LM head. Forward maps
// token indices (B, T) to logits (B, T, Vocab). Parameter names follow
// nanoGPT under the model's name: transformer.wte, transformer.wpe,
// transformer.h.{i}, transformer.ln_f, lm_head (absent when tied; with
// ShareLayers the one block is transformer.h.0).
//
// Memory, with V, L, H, C, s the dtype's size and cs the LayerNorm and
// attention statistics' (4, or 8 for F64):
//   - parameters: (V·C + Context·C + L'·(12·C² + 13·C) + 2·C + V·C')·s
//     bytes with biases, where L' is 1 with ShareLayers and L otherwise
//     and V·C' is 0 with tied embeddings and V·C otherwise; without biases
//     each block has (12·C² + 2·C) and ln_f C;
//   - Forward on (B, T) leaves B·T·C·s (embeddings, after dropout) +
//     L·(17·B·T·C·s + 4·B·T·cs + B·H·T·cs) (the blocks) + B·T·C·s + 2·B·T·cs
//     (ln_f) + B·T·V·s (logits) bytes of activations, ShareLayers or not.
//     It saves idx, alive already.
type GPT struct {
	Name   string
	Config GPTConfig
	Wte    *Embedding // transformer.wte: (V, C)
	Wpe    *Embedding // transformer.wpe: (Context, C)
	Drop   *Dropout   // transformer.drop
	Blocks []*GPTBlock
	LNF    *LayerNorm // transformer.ln_f
	Head   *Linear    // lm_head: (V, C), no bias; nil when tied
	// RunBlocks, when set, runs the transformer blocks in order instead of
	// a plain loop: activation checkpointing plugs in here
	// (checkpoint.Sequential, checkpoint.Budget.Forward). It must not
	// release its input.
	RunBlocks func(blocks []Layer, x *autograd.Tensor) *autograd.Tensor
	// FusedLoss makes Loss compute the LM head and the cross-entropy
	// together in row chunks (autograd.LinearCrossEntropy): the
	// B·T·Vocab logits never exist.
	FusedLoss bool
}

// NewGPT builds a GPT named name from cfg on b's device and dtype,
// initialised as GPT-2 (N(0, 0.02²) embeddings and Linear weights, the
// residual projections' N(0, (0.02/√(2·Layers))²), zero biases, LayerNorm
// weights 1), in training mode. gen supplies dropout masks and may be nil
// when cfg.Dropout is 0. A configuration out of range or running out of
// memory returns an error and leaves nothing allocated.
func NewGPT(b *Builder, name string, cfg GPTConfig, gen *autograd.Generator) (*GPT, error) {
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("nn.NewGPT %s: %w", name, err)
	}
	if cfg.Dropout > 0 && gen == nil {
		return nil, fmt.Errorf("nn.NewGPT %s: dropout %g with a nil generator", name, cfg.Dropout)
	}
	g := &GPT{Name: name, Config: cfg}
	err := autograd.Try(func() {
		defer releaseOnPanic(g)
		g.build(b, gen)
	})
	if err != nil {
		return nil, fmt.Errorf("nn.NewGPT %s: %w", name, err)
	}
	return g, nil
}

func (g *GPT) build(b *Builder, gen *autograd.Generator) {
	cfg, tr := g.Config, join(g.Name, "transformer")
	g.Wte = NewEmbedding(b, join(tr, "wte"), cfg.Vocab, cfg.Width, gpt2Std)
	g.Wpe = NewEmbedding(b, join(tr, "wpe"), cfg.Context, cfg.Width, gpt2Std)
	g.Drop = NewDropout(b, join(tr, "drop"), cfg.Dropout, gen)
	for i := range cfg.Layers {
		if cfg.ShareLayers && i > 0 {
			g.Blocks = append(g.Blocks, g.Blocks[0])
			continue
		}
		g.Blocks = append(g.Blocks, NewGPTBlock(b, join(tr, fmt.Sprintf("h.%d", i)), cfg, gen))
	}
	g.LNF = NewLayerNorm(b, join(tr, "ln_f"), cfg.Width, LayerNormOptions{NoBias: !cfg.Bias})
	if !cfg.TieEmbeddings {
		g.Head = newLinear(b, join(g.Name, "lm_head"), cfg.Width, cfg.Vocab, false, linearInit{gpt2Std})
	}
}

// Forward returns the logits (B, T, Vocab) for token indices idx (B, T)
// (I64 or I32, values in [0, Vocab)), which must belong to a Scope (the
// position table is attached to it with Scope.Use). T above Context
// panics with an *autograd.Error (autograd.Try returns it).
func (g *GPT) Forward(idx *autograd.Tensor) *autograd.Tensor {
	return g.Layers().Forward("nn.gpt", idx)
}

// Loss returns the mean cross-entropy of the next-token predictions for
// idx (B, T) against targets (B·T), fused with the LM head when
// FusedLoss is set (GPTLayers.Loss).
func (g *GPT) Loss(idx, targets *autograd.Tensor) *autograd.Tensor {
	return g.Layers().Loss("nn.gpt", idx, targets, g.FusedLoss, autograd.LCEOptions{})
}

// Layers returns the parts the GPT's forward runs (pipeline parallelism
// runs a range of its blocks on each stage).
func (g *GPT) Layers() GPTLayers {
	ls := make([]Layer, len(g.Blocks))
	for i, k := range g.Blocks {
		ls[i] = k
	}
	l := GPTLayers{Name: g.Name, Context: g.Config.Context, Wte: g.Wte, Wpe: g.Wpe, Drop: g.Drop, Blocks: ls, RunBlocks: g.RunBlocks, LNF: g.LNF}
	if g.Head != nil {
		l.Head = g.Head
	}
	return l
}

// Params returns the embeddings, the blocks (a shared block once), ln_f
// and the head when untied.
func (g *GPT) Params() []Param {
	var gs [][]Param
	if g.Wte != nil {
		gs = append(gs, g.Wte.Params())
	}
	if g.Wpe != nil {
		gs = append(gs, g.Wpe.Params())
	}
	for _, k := range g.Blocks {
		gs = append(gs, k.Params())
	}
	if g.LNF != nil {
		gs = append(gs, g.LNF.Params())
	}
	if g.Head != nil {
		gs = append(gs, g.Head.Params())
	}
	return collect(gs...)
}

// Train switches every dropout.
func (g *GPT) Train(on bool) {
	if g.Drop != nil {
		g.Drop.Train(on)
	}
	for _, k := range g.Blocks {
		k.Train(on)
	}
}
