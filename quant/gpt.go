package quant

import (
	"fmt"
	"iter"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// GPT is an nn.GPT prepared for quantization (calibration or QAT) or
// converted to int8. The four Linears of every block (attn.c_attn,
// attn.c_proj, mlp.c_fc, mlp.c_proj) and an untied lm_head are quantized;
// the embeddings, the layer norms and a tied head (which reads the token
// embedding) stay F32: they are lookups and per-feature affine maps whose
// parameters are a small part of the model (V·C + Context·C + 4·L·C + 2·C
// against 12·L·C² in the blocks), and quantizing the tied table would
// quantize the embedding lookup too. A prepared model borrows the
// nn.GPT's modules; a converted one owns int8 Linears and F32 copies of
// the rest, and has no dropout.
//
// Memory of the converted model (exact bytes, as the tests measure): the
// F32 embeddings 4·V·C + 4·Context·C; per distinct block 12·C² bytes of
// int8 weights, 36·C of scales, 36·C of F32 biases (none without Bias)
// and 16·C of layer norms (8·C without Bias), plus 16 with static
// activations; ln_f 8·C (4·C); an untied head V·C + 4·V (+4 static).
type GPT struct {
	Name     string
	Config   nn.GPTConfig
	Wte, Wpe *nn.Embedding
	Drop     *nn.Dropout // transformer.drop; nil when converted
	Blocks   []*GPTBlock
	LNF      *nn.LayerNorm
	Head     nn.Layer // lm_head; nil when tied
	state
}

// GPTBlock is one pre-LayerNorm block with its Linears as quantizable
// slots. The dropouts are the float model's (prepared) or nil (converted).
type GPTBlock struct {
	Name              string
	C, Heads          int // width and heads
	D                 int // features per head: C/Heads, less after head pruning
	LN1, LN2          *nn.LayerNorm
	Attn, AttnProj    nn.Layer // attn.c_attn (3·H·D, C), attn.c_proj (C, H·D)
	FC, Proj          nn.Layer // mlp.c_fc (4C, C), mlp.c_proj (C, 4C)
	AttnDrop, MLPDrop *nn.Dropout
	Core              *nn.MaterializedAttention // the float block's; nil: fused attention
	attnName, mlpName string                    // the layer paths of attn and mlp
}

// Forward returns the block applied to x (B, T, C): nn's block forward
// over these parts.
func (k *GPTBlock) Forward(x *autograd.Tensor) *autograd.Tensor {
	return nn.BlockForward(k.Name, x, k.LN1.Forward, k.attention, k.LN2.Forward, k.mlp)
}

func (k *GPTBlock) attention(x *autograd.Tensor) *autograd.Tensor {
	return nn.SelfAttention(k.attnName, x, k.C, k.Heads, k.D, k.Attn, k.AttnProj, k.AttnDrop, k.Core)
}

func (k *GPTBlock) mlp(x *autograd.Tensor) *autograd.Tensor {
	return nn.FeedForward(k.mlpName, x, k.FC, k.Proj, k.MLPDrop)
}

func (k *GPTBlock) linears() []nn.Layer { return []nn.Layer{k.Attn, k.AttnProj, k.FC, k.Proj} }

// Params returns the layer norms' and the Linears' params.
func (k *GPTBlock) Params() []nn.Param {
	var ps []nn.Param
	for _, ln := range []*nn.LayerNorm{k.LN1, k.LN2} {
		if ln != nil {
			ps = append(ps, ln.Params()...)
		}
	}
	for _, l := range k.linears() {
		if l != nil {
			ps = append(ps, l.Params()...)
		}
	}
	return ps
}

// Train sets the mode of the Linears and the dropouts.
func (k *GPTBlock) Train(on bool) {
	for _, l := range k.linears() {
		if l != nil {
			l.Train(on)
		}
	}
	for _, d := range k.dropouts() {
		if d != nil {
			d.Train(on)
		}
	}
}

// Forward returns the logits (B, T, Vocab) for token indices idx (B, T),
// I64 or I32, made in a Scope: nn's GPT forward over these parts. A
// converted model must run where no graph is recorded (Scope.NoGrad); it
// panics with *autograd.Error otherwise.
func (g *GPT) Forward(idx *autograd.Tensor) *autograd.Tensor {
	const op = "quant.gpt"
	if s := idx.Scope(); s != nil && g.converted && s.GradEnabled() {
		fail(op, "%s: %s", g.Name, inferenceOnly)
	}
	ls := make([]nn.Layer, len(g.Blocks))
	for i, k := range g.Blocks {
		ls[i] = k
	}
	return nn.GPTLayers{Name: g.Name, Context: g.Config.Context, Wte: g.Wte, Wpe: g.Wpe, Drop: g.Drop, Blocks: ls, LNF: g.LNF, Head: g.Head}.Forward(op, idx)
}

// blocks returns the distinct blocks (a shared block once).
func (g *GPT) blocks() []*GPTBlock {
	seen := map[*GPTBlock]bool{}
	var bs []*GPTBlock
	for _, k := range g.Blocks {
		if k != nil && !seen[k] {
			seen[k] = true
			bs = append(bs, k)
		}
	}
	return bs
}

// layers returns every quantizable layer (shared ones once).
func (g *GPT) layers() []nn.Layer {
	var ls []nn.Layer
	for _, k := range g.blocks() {
		ls = append(ls, k.linears()...)
	}
	if g.Head != nil {
		ls = append(ls, g.Head)
	}
	return ls
}

// Params returns a prepared model's float params, or a converted model's
// tensors — the F32 embeddings and layer norms, the int8 Linears' weights,
// scales and biases — all as buffers.
func (g *GPT) Params() []nn.Param {
	if g.float != nil {
		return g.float.Params()
	}
	var ps []nn.Param
	for _, e := range []*nn.Embedding{g.Wte, g.Wpe} {
		if e != nil {
			ps = append(ps, buffers(e.Weight)...)
		}
	}
	for _, k := range g.blocks() {
		ps = append(ps, k.Params()...)
	}
	if g.LNF != nil {
		ps = append(ps, g.LNF.Params()...)
	}
	if g.Head != nil {
		ps = append(ps, g.Head.Params()...)
	}
	for i := range ps {
		ps[i].Buffer = true
	}
	return ps
}

// Train switches training mode: the float model's dropouts and, in QAT,
// whether observers record ranges. It does nothing to a converted model.
func (g *GPT) Train(on bool) {
	if g.converted {
		return
	}
	g.float.Train(on)
	for _, l := range g.layers() {
		l.Train(on)
	}
}

// PrepareGPT returns g prepared for post-training quantization with
// static activations: it computes exactly g and records the range of every
// quantized Linear's input as it runs (Calibrate). It borrows g's modules.
func PrepareGPT(g *nn.GPT, cfg Config) (*GPT, error) { return prepareGPT(g, cfg, false) }

// PrepareQATGPT returns g prepared for quantization-aware training: the
// quantized Linears fake-quantize their weights per output feature and
// their inputs per tensor in forward (FakeQuantize); an optimizer over its
// Params (g's own) fine-tunes g; then Convert.
func PrepareQATGPT(g *nn.GPT, cfg Config) (*GPT, error) { return prepareGPT(g, cfg, true) }

func prepareGPT(g *nn.GPT, cfg Config, qat bool) (*GPT, error) {
	cfg, err := cfg.resolved(qat)
	if err != nil {
		return nil, fmt.Errorf("quant: prepare %s: %w", g.Name, err)
	}
	if g.Wte == nil || g.Wpe == nil || g.LNF == nil || len(g.Blocks) == 0 {
		return nil, fmt.Errorf("quant: prepare %s: the model is not fully built", g.Name)
	}
	lin := func(l *nn.Linear) nn.Layer { return &floatLinear{l: l, q: newQuantizer(cfg, qat)} }
	q := &GPT{Name: g.Name, Config: g.Config, Wte: g.Wte, Wpe: g.Wpe, Drop: g.Drop, LNF: g.LNF, state: state{cfg: cfg, qat: qat, float: g}}
	made := map[*nn.GPTBlock]*GPTBlock{}
	for _, k := range g.Blocks {
		b := made[k]
		if b == nil {
			b = &GPTBlock{Name: k.Name, C: k.Attn.C, Heads: k.Attn.Heads, D: k.Attn.Attn.Out / (3 * k.Attn.Heads), LN1: k.LN1, LN2: k.LN2,
				Attn: lin(k.Attn.Attn), AttnProj: lin(k.Attn.Proj), FC: lin(k.MLP.FC), Proj: lin(k.MLP.Proj),
				AttnDrop: k.Attn.Drop, MLPDrop: k.MLP.Drop, Core: k.Attn.Core, attnName: k.Attn.Name, mlpName: k.MLP.Name}
			made[k] = b
		}
		q.Blocks = append(q.Blocks, b)
	}
	if g.Head != nil {
		q.Head = lin(g.Head)
	}
	return q, nil
}

// Calibrate runs the prepared model on each batch of token indices (B, T)
// made in a Scope, without recording a graph and with the dropouts off,
// and its observers record the ranges of the quantized Linears' inputs.
// It releases what it makes and restores the dropouts' modes.
func (g *GPT) Calibrate(batches iter.Seq[*autograd.Tensor]) error {
	if g.converted {
		return fmt.Errorf("quant: calibrate %s: the model is already converted", g.Name)
	}
	// Calibration sees the model as inference will: dropouts off.
	var drops []*nn.Dropout
	for _, k := range g.blocks() {
		drops = append(drops, k.dropouts()...)
	}
	for _, d := range append(drops, g.Drop) {
		if d != nil && d.Training() {
			d.Train(false)
			defer d.Train(true)
		}
	}
	return calibrate(g, quantizers(g.layers()), batches)
}

// Convert returns the int8 model of a prepared GPT (see GPT): the Linears'
// weights quantized per output feature, with the input scales the
// observers recorded (static) or none (dynamic), and F32 copies of the
// embeddings and layer norms. The prepared and float models are left as
// they were; the result owns its tensors.
func (g *GPT) Convert() (*GPT, error) {
	out, err := g.convert(false)
	if err != nil {
		return nil, fmt.Errorf("quant: convert %s: %w", g.Name, err)
	}
	return out, nil
}

func (g *GPT) convert(empty bool) (*GPT, error) {
	if g.converted {
		return nil, fmt.Errorf("already converted")
	}
	if err := checkObserved(g.cfg, g.layers(), empty); err != nil {
		return nil, err
	}
	q := &GPT{Name: g.Name, Config: g.Config, state: state{cfg: g.cfg, qat: g.qat, converted: true}}
	err := autograd.Try(func() {
		defer releaseOnPanic(q)
		q.Wte = &nn.Embedding{Name: g.Wte.Name, Vocab: g.Wte.Vocab, C: g.Wte.C, Weight: copyF32(g.Wte.Weight)}
		q.Wpe = &nn.Embedding{Name: g.Wpe.Name, Vocab: g.Wpe.Vocab, C: g.Wpe.C, Weight: copyF32(g.Wpe.Weight)}
		made := map[*GPTBlock]*GPTBlock{}
		for _, k := range g.Blocks {
			b := made[k]
			if b == nil {
				b = &GPTBlock{Name: k.Name, C: k.C, Heads: k.Heads, D: k.D, attnName: k.attnName, mlpName: k.mlpName}
				made[k] = b
				q.Blocks = append(q.Blocks, b)
				b.LN1, b.LN2 = copyLN(k.LN1), copyLN(k.LN2)
				b.Attn, b.AttnProj = convertLayer(k.Attn, g.cfg, empty), convertLayer(k.AttnProj, g.cfg, empty)
				b.FC, b.Proj = convertLayer(k.FC, g.cfg, empty), convertLayer(k.Proj, g.cfg, empty)
				continue
			}
			q.Blocks = append(q.Blocks, b)
		}
		q.LNF = copyLN(g.LNF)
		if g.Head != nil {
			q.Head = convertLayer(g.Head, g.cfg, empty)
		}
	})
	if err != nil {
		return nil, err
	}
	return q, nil
}

// copyF32 returns an F32 copy of t tagged Parameter with t's name.
func copyF32(t *autograd.Tensor) *autograd.Tensor {
	c := param(t.Device(), dtype.F32, t.Name(), t.Shape()...)
	c.CopyFrom(t)
	return c
}

// copyLN returns a LayerNorm with F32 copies of l's weight and bias.
func copyLN(l *nn.LayerNorm) *nn.LayerNorm {
	c := &nn.LayerNorm{Name: l.Name, C: l.C, Eps: l.Eps, Weight: copyF32(l.Weight)}
	if l.Bias != nil {
		c.Bias = copyF32(l.Bias)
	}
	return c
}

// dropouts returns the block's dropouts: attention (when materialized),
// residual and MLP; entries may be nil.
func (k *GPTBlock) dropouts() []*nn.Dropout {
	ds := []*nn.Dropout{k.AttnDrop, k.MLPDrop}
	if k.Core != nil {
		ds = append(ds, k.Core.Drop)
	}
	return ds
}
