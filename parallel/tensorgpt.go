package parallel

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// TensorOptions configures NewTensorGPT.
type TensorOptions struct {
	// Sequence turns sequence parallelism on (Korthikanti et al. 2022):
	// between the tensor-parallel regions (the LayerNorms, dropouts and
	// residual adds, the embeddings' sum and ln_f) each rank holds only its
	// rows of the (B·T, C) activations, B·T/Size of them, and the regions
	// are entered by Gather and left by Scatter instead of Copy and
	// Reduce. B·T must divide by the ranks.
	Sequence bool
}

// TensorGPT is one rank's part of an nn.GPT split by tensor parallelism
// (Shoeybi et al. 2019) across the ranks of Comm, T = Comm.Size() of them:
// each block's attention heads (c_attn column-parallel by heads, c_proj
// row-parallel) and MLP (c_fc column-parallel, c_proj row-parallel) are
// split T ways, so are the token embedding and the LM head by vocabulary
// (VocabEmbedding; the head's logits are this rank's classes and Loss is
// the parallel CrossEntropy: no rank holds the whole logits). The
// position embedding, the LayerNorms and the row-parallel biases are
// whole on every rank. Parameter names are nn.GPT's; a split parameter
// holds this rank's part of the unsplit one.
//
// Every rank runs the same Forward and Loss (the same idx and targets) and
// gets the same loss; the gradients of the split parameters are this
// rank's parts of the unsplit model's, those of the whole parameters are
// the same on every rank (summed across the ranks in backward under
// sequence parallelism), so each rank's optimizer steps its own
// parameters without further communication.
type TensorGPT struct {
	Name    string
	Config  nn.GPTConfig
	Comm    Communicator
	Options TensorOptions
	Wte     *VocabEmbedding // transformer.wte: rows of the vocabulary
	Wpe     *nn.Embedding   // transformer.wpe: whole
	Drop    *nn.Dropout     // transformer.drop
	Blocks  []*TensorBlock
	LNF     *nn.LayerNorm // transformer.ln_f: whole
	Head    *ColumnLinear // lm_head: rows of the vocabulary; nil when tied
	// RunBlocks, when set, runs the blocks in order instead of a plain
	// loop (nn.GPT.RunBlocks: activation checkpointing plugs in here; a
	// recomputed block repeats its collectives on every rank alike). It
	// must not release its input.
	RunBlocks func(blocks []nn.Layer, x *autograd.Tensor) *autograd.Tensor
}

// TensorBlock is one rank's part of an nn.GPTBlock: ln_1, attention over
// Heads/T heads (Attn c_attn, Proj c_proj), ln_2 and the MLP's share of
// the hidden features (FC c_fc, Out c_proj), run by nn.BlockForward,
// nn.SelfAttention and nn.FeedForward.
type TensorBlock struct {
	Name     string
	Heads    int // this rank's heads
	HeadDim  int
	LN1, LN2 *nn.LayerNorm
	Attn     *ColumnLinear // attn.c_attn: q, k, v of this rank's heads
	Proj     *RowLinear    // attn.c_proj
	AttnDrop *nn.Dropout   // attn.resid_dropout
	FC       *ColumnLinear // mlp.c_fc
	Out      *RowLinear    // mlp.c_proj
	MLPDrop  *nn.Dropout   // mlp.dropout
	run      *tensorRun
}

// tensorRun is what the blocks of a model share: the group, the mode and
// the shape of the batch being run.
type tensorRun struct {
	c    Communicator
	seq  bool
	b, t int
}

// NewTensorGPT builds this rank's part of the GPT that nn.NewGPT(b, name,
// cfg, gen) builds, with the same initial values: a split parameter holds
// exactly its elements of the unsplit one (nn.Init draws any element range
// alone), for the same builder seed on every rank. gen supplies dropout
// masks: every rank's must have the same seed and state, and then the
// masks are the unsplit model's for that state (under sequence
// parallelism each rank draws its rows' part of the same positions). The
// heads, 4·Width and Vocab must divide by Comm.Size(); ShareLayers is not
// supported. From a deferred builder the tensor-parallel layers'
// parameters get their storage here (this rank's parts; the row-parallel
// biases whole), the position table and the LayerNorms at their first use
// (nn.NewDeferredBuilder's way); do not pass such a builder to NewDDP.
func NewTensorGPT(b *nn.Builder, name string, cfg nn.GPTConfig, c Communicator, gen *autograd.Generator, o TensorOptions) (*TensorGPT, error) {
	n := c.Size()
	switch {
	case cfg.ShareLayers:
		return nil, fmt.Errorf("parallel.NewTensorGPT %s: ShareLayers is not supported", name)
	case cfg.Heads > 0 && cfg.Heads%n != 0, cfg.Vocab%n != 0:
		return nil, fmt.Errorf("parallel.NewTensorGPT %s: %d heads and vocabulary %d: want both divisible by the %d ranks", name, cfg.Heads, cfg.Vocab, n)
	case cfg.Dropout > 0 && gen == nil:
		return nil, fmt.Errorf("parallel.NewTensorGPT %s: dropout %g with a nil generator", name, cfg.Dropout)
	}
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("parallel.NewTensorGPT %s: %w", name, err)
	}
	g := &TensorGPT{Name: name, Config: cfg, Comm: c, Options: o}
	err := autograd.Try(func() {
		defer func() {
			if r := recover(); r != nil {
				nn.Release(g)
				panic(r)
			}
		}()
		g.build(b, gen)
	})
	if err != nil {
		return nil, fmt.Errorf("parallel.NewTensorGPT %s: %w", name, err)
	}
	return g, nil
}

// gpt2Std is nn.GPT's initial standard deviation.
const gpt2Std = 0.02

// build makes g's modules, drawing from b in nn.GPT's order.
func (g *TensorGPT) build(b *nn.Builder, gen *autograd.Generator) {
	cfg, c, seq := g.Config, g.Comm, g.Options.Sequence
	tr, rank, n := join(g.Name, "transformer"), c.Rank(), c.Size()
	rows := cfg.Vocab / n
	g.Wte = &VocabEmbedding{Name: join(tr, "wte"), Vocab: cfg.Vocab, Lo: rank * rows, C: cfg.Width, Comm: c, Seq: seq}
	g.Wte.Weight = shardParam(b, join(g.Wte.Name, "weight"), gpt2Std, rowsPieces(rank*rows, rows, cfg.Width), rows, cfg.Width)
	g.Wpe = nn.NewEmbedding(b, join(tr, "wpe"), cfg.Context, cfg.Width, gpt2Std)
	g.Drop = nn.NewDropout(b, join(tr, "drop"), cfg.Dropout, gen)
	run := &tensorRun{c: c, seq: seq}
	for i := range cfg.Layers {
		g.Blocks = append(g.Blocks, newTensorBlock(b, join(tr, fmt.Sprintf("h.%d", i)), cfg, gen, run))
	}
	g.LNF = nn.NewLayerNorm(b, join(tr, "ln_f"), cfg.Width, nn.LayerNormOptions{NoBias: !cfg.Bias})
	if !cfg.TieEmbeddings {
		h := &ColumnLinear{Name: join(g.Name, "lm_head"), In: cfg.Width, Out: cfg.Vocab, Comm: c, Seq: seq}
		h.Weight = shardParam(b, join(h.Name, "weight"), gpt2Std, rowsPieces(rank*rows, rows, cfg.Width), rows, cfg.Width)
		g.Head = h
	}
}

// newTensorBlock makes this rank's part of block name, drawing from b in
// nn.NewGPTBlock's order.
func newTensorBlock(b *nn.Builder, name string, cfg nn.GPTConfig, gen *autograd.Generator, run *tensorRun) *TensorBlock {
	c, n, rank := cfg.Width, run.c.Size(), run.c.Rank()
	heads := cfg.Heads / n
	d := c / cfg.Heads
	hid := perRank("hidden width", 4*c, n)
	out := gpt2Std / math.Sqrt(2*float64(cfg.Layers))
	ln := nn.LayerNormOptions{NoBias: !cfg.Bias}
	k := &TensorBlock{Name: name, Heads: heads, HeadDim: d, run: run}
	k.LN1 = nn.NewLayerNorm(b, join(name, "ln_1"), c, ln)
	attn := join(name, "attn")
	k.AttnDrop = nn.NewDropout(b, join(attn, "resid_dropout"), cfg.Dropout, gen)
	w := heads * d // this rank's features of each of q, k and v
	var qkv []piece
	for j := range 3 {
		qkv = append(qkv, piece{j * w * c, (j*c + rank*w) * c, w * c})
	}
	k.Attn = column(b, join(attn, "c_attn"), c, 3*c, 3*w, cfg.Bias, qkv, run)
	k.Proj = row(b, join(attn, "c_proj"), c, c, out, cfg.Bias, rank, run)
	k.LN2 = nn.NewLayerNorm(b, join(name, "ln_2"), c, ln)
	mlp := join(name, "mlp")
	k.MLPDrop = nn.NewDropout(b, join(mlp, "dropout"), cfg.Dropout, gen)
	k.FC = column(b, join(mlp, "c_fc"), c, 4*c, hid, cfg.Bias, rowsPieces(rank*hid, hid, c), run)
	k.Out = row(b, join(mlp, "c_proj"), 4*c, c, out, cfg.Bias, rank, run)
	return k
}

// column makes a ColumnLinear of in → whole features with this rank's
// local rows (the pieces of the whole weight), N(0, 0.02²), bias 0.
func column(b *nn.Builder, name string, in, whole, local int, bias bool, ps []piece, run *tensorRun) *ColumnLinear {
	l := &ColumnLinear{Name: name, In: in, Out: whole, Comm: run.c, Seq: run.seq}
	l.Weight = shardParam(b, join(name, "weight"), gpt2Std, ps, local, in)
	if bias {
		l.Bias = shardParam(b, join(name, "bias"), 0, nil, local)
	}
	return l
}

// row makes a RowLinear of in → out features with this rank's columns of
// the whole weight, N(0, std²), and a whole zero bias.
func row(b *nn.Builder, name string, in, out int, std float64, bias bool, rank int, run *tensorRun) *RowLinear {
	k := in / run.c.Size()
	l := &RowLinear{Name: name, In: in, Out: out, Comm: run.c, Seq: run.seq}
	l.Weight = shardParam(b, join(name, "weight"), std, colsPieces(out, in, rank*k, k), out, k)
	if bias {
		l.Bias = shardParam(b, join(name, "bias"), 0, nil, out)
	}
	return l
}

// Forward returns this rank's logits (B, T, Vocab/Size) — classes
// [Rank·Vocab/Size, (Rank+1)·Vocab/Size) — for token indices idx (B, T)
// (I64 or I32, values in [0, Vocab)), which must belong to a Scope.
func (g *TensorGPT) Forward(idx *autograd.Tensor) *autograd.Tensor {
	h := g.embedStage(idx)
	ls := make([]nn.Layer, len(g.Blocks))
	for i, k := range g.Blocks {
		ls[i] = k
	}
	return g.outStage(g.blocks(ls, h))
}

// start checks idx and records the batch's shape for the blocks.
func (g *TensorGPT) start(idx *autograd.Tensor) *autograd.Scope {
	s := scopeOf("parallel.tensor_gpt", idx)
	if idx.Rank() != 2 || idx.Dim(1) > g.Config.Context || idx.Dim(1) == 0 {
		panic(&autograd.Error{Op: "parallel.tensor_gpt", Msg: fmt.Sprintf("%s: indices %v: want (B, T) with 1 ≤ T ≤ context %d", g.Name, idx.Shape(), g.Config.Context)})
	}
	g.shape(idx.Dim(0), idx.Dim(1))
	return s
}

// shape records the batch's shape (B, T) for the blocks.
func (g *TensorGPT) shape(B, T int) {
	run := g.Blocks[0].run
	run.b, run.t = B, T
	if run.seq {
		perRank("tokens B·T", B*T, g.Comm.Size())
	}
}

// embedStage returns the embeddings of idx after the dropout: what the
// first block takes.
func (g *TensorGPT) embedStage(idx *autograd.Tensor) *autograd.Tensor {
	s := g.start(idx)
	defer s.Within(join(g.Name, "transformer"))()
	x := g.embed(s, idx)
	h := g.Blocks[0].run.dropout(g.Drop, x)
	x.Release()
	return h
}

// outStage returns this rank's logits of the last block's output h,
// released: ln_f, then the head.
func (g *TensorGPT) outStage(h *autograd.Tensor) *autograd.Tensor {
	s, run := h.Scope(), g.Blocks[0].run
	y := func() *autograd.Tensor {
		defer s.Within(join(g.Name, "transformer"))()
		return run.layerNorm(g.LNF, h)
	}()
	h.Release()
	defer s.Within(join(g.Name, "lm_head"))()
	head := g.Head
	if head == nil {
		head = &ColumnLinear{Name: join(g.Name, "lm_head"), Weight: g.Wte.Weight, Comm: g.Comm, Seq: run.seq}
	}
	logits := head.Forward(y)
	y.Release()
	if !run.seq {
		return logits
	}
	defer logits.Release()
	return logits.View(run.b, run.t, logits.Dim(1))
}

// blocks runs ls (blocks of g) on h, released.
func (g *TensorGPT) blocks(ls []nn.Layer, h *autograd.Tensor) *autograd.Tensor {
	defer h.Scope().Within(join(g.Name, "transformer"))()
	if g.RunBlocks != nil {
		y := g.RunBlocks(ls, h)
		h.Release()
		return y
	}
	for _, k := range ls {
		n := k.Forward(h)
		h.Release()
		h = n
	}
	return h
}

// embed returns the token plus position embeddings: (B, T, C), or this
// rank's rows (B·T/Size, C) under sequence parallelism.
func (g *TensorGPT) embed(s *autograd.Scope, idx *autograd.Tensor) *autograd.Tensor {
	T := idx.Dim(1)
	tok := g.Wte.Forward(idx)
	defer tok.Release()
	if !g.Options.Sequence {
		wpe := s.Use(g.Wpe.Weight)
		pos := wpe.Slice(0, 0, T)
		defer release(wpe, pos)
		return tok.Add(pos)
	}
	rows := tok.Dim(0)
	at := make([]int64, rows)
	for i := range at {
		at[i] = int64((g.Comm.Rank()*rows + i) % T)
	}
	pi := s.FromInt64s(idx.Device(), []int{rows}, at)
	wpe := enterCopy(g.Comm, s, g.Wpe.Weight)
	pos := autograd.Embedding(wpe, pi)
	defer release(pi, wpe, pos)
	return tok.Add(pos)
}

// Loss returns the cross-entropy of this rank's logits (from Forward)
// against the whole targets (B, T): CrossEntropy over the flattened rows,
// the same scalar on every rank.
func (g *TensorGPT) Loss(logits, target *autograd.Tensor, o autograd.CEOptions) *autograd.Tensor {
	n := logits.Dim(0) * logits.Dim(1)
	l := logits.View(n, logits.Dim(2))
	t := target.View(n)
	defer release(l, t)
	return CrossEntropy(g.Comm, l, t, g.Comm.Rank()*l.Dim(1), g.Config.Vocab, o)
}

// Params returns this rank's parameters in nn.GPT's order.
func (g *TensorGPT) Params() []nn.Param {
	var ps []nn.Param
	for _, m := range []nn.Module{g.Wte, g.Wpe} {
		if !isNil(m) {
			ps = append(ps, m.Params()...)
		}
	}
	for _, k := range g.Blocks {
		ps = append(ps, k.Params()...)
	}
	for _, m := range []nn.Module{g.LNF, g.Head} {
		if !isNil(m) {
			ps = append(ps, m.Params()...)
		}
	}
	return ps
}

// Train switches every dropout.
func (g *TensorGPT) Train(on bool) {
	if g.Drop != nil {
		g.Drop.Train(on)
	}
	for _, k := range g.Blocks {
		k.AttnDrop.Train(on)
		k.MLPDrop.Train(on)
	}
}

// Forward returns the block applied to x: (B, T, C), or this rank's rows
// (B·T/Size, C) under sequence parallelism.
func (k *TensorBlock) Forward(x *autograd.Tensor) *autograd.Tensor {
	r := k.run
	ln1 := func(x *autograd.Tensor) *autograd.Tensor { return r.layerNorm(k.LN1, x) }
	ln2 := func(x *autograd.Tensor) *autograd.Tensor { return r.layerNorm(k.LN2, x) }
	return nn.BlockForward(k.Name, x, ln1, k.attention, ln2, k.mlp)
}

// attention runs c_attn over this rank's heads (entering the region) and
// nn.Attend over them, then the residual dropout.
func (k *TensorBlock) attention(h *autograd.Tensor) *autograd.Tensor {
	r := k.run
	qkv := k.Attn.Forward(h)
	x := qkv.View(r.b, r.t, qkv.Dim(qkv.Rank()-1))
	qkv.Release()
	a := nn.Attend(join(k.Name, "attn"), x, k.Heads, k.HeadDim, k.Proj, nil, nil)
	defer a.Release()
	return r.dropout(k.AttnDrop, a)
}

// mlp runs nn.FeedForward over this rank's hidden features and the
// dropout.
func (k *TensorBlock) mlp(h *autograd.Tensor) *autograd.Tensor {
	m := nn.FeedForward(join(k.Name, "mlp"), h, k.FC, k.Out, nil)
	defer m.Release()
	return k.run.dropout(k.MLPDrop, m)
}

// Params returns the block's parameters in nn.GPTBlock's order.
func (k *TensorBlock) Params() []nn.Param {
	var ps []nn.Param
	for _, m := range []nn.Module{k.LN1, k.Attn, k.Proj, k.LN2, k.FC, k.Out} {
		if !isNil(m) {
			ps = append(ps, m.Params()...)
		}
	}
	return ps
}

// Train switches the dropouts.
func (k *TensorBlock) Train(on bool) {
	k.AttnDrop.Train(on)
	k.MLPDrop.Train(on)
}

// layerNorm applies l to x; under sequence parallelism x is this rank's
// rows and l's weights enter by Copy, so that their gradients are summed
// across the ranks.
func (r *tensorRun) layerNorm(l *nn.LayerNorm, x *autograd.Tensor) *autograd.Tensor {
	if !r.seq {
		return l.Forward(x)
	}
	s := x.Scope()
	defer s.Within(l.Name)()
	w := enterCopy(r.c, s, l.Weight)
	var b *autograd.Tensor
	if l.Bias != nil {
		b = enterCopy(r.c, s, l.Bias)
	}
	defer release(w, b)
	return autograd.LayerNorm(x, w, b, l.Eps)
}

// dropout applies d to x (a new tensor or handle; x stays). Under
// sequence parallelism x is this rank's rows, elements [Rank·n,
// (Rank+1)·n) of the whole: it draws the masks at those positions of the
// generator's stream and leaves the generator where the whole tensor's
// draw would, so the masks are the unsplit model's. A recomputation
// (activation checkpointing) replays the recorded draw and leaves the
// generator alone.
func (r *tensorRun) dropout(d *nn.Dropout, x *autograd.Tensor) *autograd.Tensor {
	if !r.seq || !d.Training() || d.P == 0 || x.Scope().Recomputing() {
		return d.Forward(x)
	}
	st := d.Gen.State()
	n := uint64(x.Len())
	d.Gen.SetState(autograd.GeneratorState{Seed: st.Seed, Offset: st.Offset + uint64(r.c.Rank())*n})
	y := d.Forward(x)
	whole := n * uint64(r.c.Size())
	d.Gen.SetState(autograd.GeneratorState{Seed: st.Seed, Offset: st.Offset + (whole+3)&^3})
	return y
}

// isNil reports whether m is nil or a nil pointer in an interface.
func isNil(m nn.Module) bool {
	switch v := m.(type) {
	case nil:
		return true
	case *nn.Embedding:
		return v == nil
	case *nn.LayerNorm:
		return v == nil
	case *VocabEmbedding:
		return v == nil
	case *ColumnLinear:
		return v == nil
	case *RowLinear:
		return v == nil
	}
	return false
}

// join makes a dotted name.
func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
