package nn

import (
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
)

// The GPT's forward, written once over the parts it runs: nn's own
// modules, or another package's versions of them (package quant's
// observed or int8 Linears). Each releases what it makes as soon as it is
// no longer needed, so the memory formulas of GPT, GPTBlock,
// CausalSelfAttention and MLP hold for any parts of the same shapes.

// GPTLayers are what a GPT's forward runs, in order.
type GPTLayers struct {
	Name     string // the model's name: its scopes are Name.transformer and Name.lm_head
	Context  int    // the longest sequence
	Wte, Wpe *Embedding
	Drop     *Dropout // after the embeddings (nil: none)
	Blocks   []Layer
	// RunBlocks, when set, runs the blocks instead of a plain loop (see
	// GPT.RunBlocks).
	RunBlocks func(blocks []Layer, x *autograd.Tensor) *autograd.Tensor
	LNF       *LayerNorm
	Head      Layer // lm_head (nil: tied to Wte's table)
}

// Forward returns the logits (B, T, Vocab) for token indices idx (B, T)
// (I64 or I32, values in [0, Vocab)), which must belong to a Scope; bad
// indices panic with an *autograd.Error naming op. It is Embed, Body,
// then Out.
func (l GPTLayers) Forward(op string, idx *autograd.Tensor) *autograd.Tensor {
	return l.Out(l.Body(l.Embed(op, idx)))
}

// Embed returns the token plus position embeddings of idx (B, T), after
// the dropout: the first part of Forward (pipeline parallelism runs the
// parts on different stages). It panics as Forward does on bad indices.
func (l GPTLayers) Embed(op string, idx *autograd.Tensor) *autograd.Tensor {
	s := idx.Scope()
	switch {
	case idx.Rank() != 2 || (idx.DType() != dtype.I64 && idx.DType() != dtype.I32):
		fail(op, "%s: indices %v %s: want (B, T) of i64 or i32", l.Name, idx.Shape(), idx.DType())
	case idx.Dim(1) > l.Context || idx.Dim(1) == 0:
		fail(op, "%s: sequence length T = %d (indices %v): want 1 ≤ T ≤ context %d", l.Name, idx.Dim(1), idx.Shape(), l.Context)
	case s == nil:
		fail(op, "%s: indices %v are free-standing: make them in the step's Scope (Scope.FromInt64s)", l.Name, idx.Shape())
	}
	defer s.Within(join(l.Name, "transformer"))()
	T := idx.Dim(1)
	tok := l.Wte.Forward(idx) // (B, T, C)
	wpe := s.Use(l.Wpe.Weight)
	pos := wpe.Slice(0, 0, T) // (T, C), a view
	x := tok.Add(pos)
	release(idx, tok, wpe, pos)
	return dropout(l.Drop, x)
}

// Body runs the blocks on h (RunBlocks, or one after the other) and
// returns their result, releasing h: the middle part of Forward.
func (l GPTLayers) Body(h *autograd.Tensor) *autograd.Tensor {
	defer h.Scope().Within(join(l.Name, "transformer"))()
	if l.RunBlocks != nil {
		n := l.RunBlocks(l.Blocks, h)
		h.Release()
		return n
	}
	for _, k := range l.Blocks {
		n := k.Forward(h)
		h.Release()
		h = n
	}
	return h
}

// Out returns the logits of the last block's result h (B, T, C): the
// final LayerNorm and the LM head (Wte's table when Head is nil), the
// last part of Forward. It releases h.
func (l GPTLayers) Out(h *autograd.Tensor) *autograd.Tensor {
	s := h.Scope()
	defer s.Within(join(l.Name, "transformer"))()
	y := l.LNF.Forward(h) // saves h
	h.Release()
	var logits *autograd.Tensor
	if l.Head != nil {
		logits = l.Head.Forward(y)
	} else {
		func() {
			defer s.Within(join(l.Name, "lm_head"))()
			logits = autograd.Linear(y, l.Wte.Weight, nil)
		}()
	}
	y.Release()
	return logits
}

// BlockForward is a pre-LayerNorm transformer block, GPTBlock's forward,
// with any parts: x + attn(ln1(x)), then that plus mlp(ln2(…)), in scope
// name.
func BlockForward(name string, x *autograd.Tensor, ln1, attn, ln2, mlp func(*autograd.Tensor) *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(name)()
	h := ln1(x) // saved by c_attn
	a := attn(h)
	h.Release()
	r := x.Add(a) // saved by ln_2
	a.Release()
	h = ln2(r) // saved by c_fc
	m := mlp(h)
	h.Release()
	out := r.Add(m)
	r.Release()
	m.Release()
	return out
}

// SelfAttention is CausalSelfAttention's forward over x (B, T, c) with any
// c_attn (qkv: c to 3·heads·d features) and c_proj (proj: heads·d to c),
// then drop (nil: none), in scope name; core nil attends with the fused
// autograd.ScaledDotProductAttention.
func SelfAttention(name string, x *autograd.Tensor, c, heads, d int, qkv, proj Layer, drop *Dropout, core *MaterializedAttention) *autograd.Tensor {
	defer x.Scope().Within(name)()
	if x.Rank() != 3 || x.Dim(2) != c {
		fail("nn.causal_self_attention", "%s: input %v: want (B, T, %d)", name, x.Shape(), c)
	}
	return Attend(name, qkv.Forward(x), heads, d, proj, drop, core)
}

// Attend is SelfAttention after c_attn: causal attention of the heads of
// qkv (B, T, 3·heads·d: all heads' q, then k, then v), c_proj and drop,
// in scope name; core nil attends with the fused
// autograd.ScaledDotProductAttention, else core.Attend. It releases qkv as
// soon as it has copied it (package parallel's tensor-parallel blocks
// compute qkv their own way).
func Attend(name string, qkv *autograd.Tensor, heads, d int, proj Layer, drop *Dropout, core *MaterializedAttention) *autograd.Tensor {
	defer qkv.Scope().Within(name)()
	if qkv.Rank() != 3 || qkv.Dim(2) != 3*heads*d {
		fail("nn.causal_self_attention", "%s: q, k, v %v: want (B, T, %d)", name, qkv.Shape(), 3*heads*d)
	}
	B, T := qkv.Dim(0), qkv.Dim(1)
	// c_attn's output (B, T, 3·H·D) is viewed as (B, T, 3, H, D) and copied
	// once into head-major (3, B, H, T, D); then it goes.
	v5 := qkv.View(B, T, 3, heads, d)
	perm := v5.Permute(2, 0, 3, 1, 4)
	hm := perm.Contiguous()
	release(nil, qkv, v5, perm)
	// q, k and v are contiguous (B, H, T, D) views of the copy, which
	// attention saves (the fused one with its output y and lse).
	parts := autograd.Split(hm, 0, 1, 1, 1)
	q, k, v := parts[0].Squeeze(0), parts[1].Squeeze(0), parts[2].Squeeze(0)
	var y *autograd.Tensor
	if core == nil {
		y = autograd.ScaledDotProductAttention(q, k, v, true)
	} else {
		y = core.Attend(q, k, v)
	}
	release(nil, hm, parts[0], parts[1], parts[2], q, k, v)
	// Back to (B, T, H·D): one more copy, saved by c_proj.
	yt := y.Transpose(1, 2)
	yc := yt.Reshape(B, T, heads*d)
	release(nil, y, yt)
	p := proj.Forward(yc) // saves yc
	yc.Release()
	return dropout(drop, p)
}

// FeedForward is MLP's forward over x (…, C) with any c_fc and c_proj:
// fc, the tanh approximation of GELU, proj, then drop (nil: none), in
// scope name.
func FeedForward(name string, x *autograd.Tensor, fc, proj Layer, drop *Dropout) *autograd.Tensor {
	defer x.Scope().Within(name)()
	h := fc.Forward(x) // saved by GELU
	g := h.GELUTanh()  // saved by c_proj
	h.Release()
	p := proj.Forward(g)
	g.Release()
	return dropout(drop, p)
}

// dropout applies d to x and releases x, or returns x when d is nil.
func dropout(d *Dropout, x *autograd.Tensor) *autograd.Tensor {
	if d == nil {
		return x
	}
	y := d.Forward(x)
	x.Release()
	return y
}

// Loss returns the cross-entropy (o's options; mean by default) of the
// next-token logits Forward would make for idx (B, T) against targets
// (B·T, I64 or I32). With fused the LM head and the loss are one
// autograd.LinearCrossEntropy over chunks of o.Chunk rows, so the
// (B·T, Vocab) logits never exist: the forward saves the final
// LayerNorm's output and one log-sum-exp per row, and backward recomputes
// each chunk's logits (its memory formula is LinearCrossEntropy's).
// Without fused it is Forward, then autograd.CrossEntropy. A fused loss
// needs the tied head or an nn *Linear one (a quantized head panics with
// an *autograd.Error naming op).
func (l GPTLayers) Loss(op string, idx, targets *autograd.Tensor, fused bool, o autograd.LCEOptions) *autograd.Tensor {
	h := l.Body(l.Embed(op, idx))
	if !fused {
		logits := l.Out(h)
		flat := logits.Reshape(-1, logits.Dim(2))
		logits.Release()
		return autograd.CrossEntropy(flat, targets, o.CEOptions)
	}
	w, b := l.headWeights(op)
	s := h.Scope()
	var y *autograd.Tensor
	func() {
		defer s.Within(join(l.Name, "transformer"))()
		y = l.LNF.Forward(h)
	}()
	h.Release()
	defer s.Within(join(l.Name, "lm_head"))()
	flat := y.Reshape(-1, y.Dim(2))
	y.Release()
	loss := autograd.LinearCrossEntropy(flat, w, b, targets, o)
	flat.Release()
	return loss
}

// headWeights returns the LM head's weight (Vocab, C) and bias (nil:
// none), Wte's table when tied.
func (l GPTLayers) headWeights(op string) (w, b *autograd.Tensor) {
	switch h := l.Head.(type) {
	case nil:
		return l.Wte.Weight, nil
	case *Linear:
		return h.Weight, h.Bias
	}
	fail(op, "%s: a fused loss needs the tied head or an nn.Linear one, not %T", l.Name, l.Head)
	return nil, nil
}
