package nn

import "github.com/headroom-ml/headroom/autograd"

// CausalSelfAttention is GPT-2's multi-head causal self-attention over x
// (B, T, C) with H heads of D = C/H features: one Linear (C, 3C) makes q, k
// and v, the fused autograd.ScaledDotProductAttention (causal) attends,
// a Linear (C, C) projects the heads back, and dropout (the residual
// dropout) follows. Names follow nanoGPT: c_attn, c_proj, resid_dropout.
//
// Memory, with s the dtype's size and cs the attention statistics' (4, or
// 8 for F64):
//   - parameters: (4·C² + 4·C)·s bytes (4·C²·s without bias);
//   - forward leaves 6·B·T·C·s + B·H·T·cs bytes of activations: q, k, v in
//     head-major layout (3·B·T·C·s, one contiguous copy of c_attn's output,
//     saved by attention), attention's output (B·T·C·s) and per-row
//     log-sum-exp (B·H·T·cs), the output back in (B, T, C) layout saved
//     by c_proj (B·T·C·s), and the result (B·T·C·s). It saves x, alive
//     already. c_attn's own output (3·B·T·C·s) is released as soon as it
//     has been copied, so inside forward the peak is 3·B·T·C·s higher for
//     a moment. Without a recorded graph only the result remains.
//
// With Core set (GPTConfig.MaterializedAttention) the attention is
// materialized instead (MaterializedAttention): no output and
// log-sum-exp are saved, but the (B, H, T, T) weights are, once more after
// the attention dropout, and a (T, T) F32 causal mask (4·T² bytes).
type CausalSelfAttention struct {
	Name     string
	C, Heads int
	Attn     *Linear                // c_attn: (3C, C) weight, rows q, k, v
	Proj     *Linear                // c_proj: (C, C)
	Drop     *Dropout               // resid_dropout
	Core     *MaterializedAttention // nil: the fused attention
}

// NewCausalSelfAttention makes a CausalSelfAttention of width c with heads
// heads (c divisible by heads), residual dropout probability dropout
// (masks from gen, which may be nil when dropout is 0) and biases when
// bias is set. Its Linears are initialised like PyTorch's (U(±1/√c));
// NewGPT uses GPT-2's initialisation instead.
func NewCausalSelfAttention(b *Builder, name string, c, heads int, dropout float64, gen *autograd.Generator, bias bool) *CausalSelfAttention {
	return newAttention(b, name, c, heads, dropout, gen, bias, false, linearInit{}, linearInit{})
}

func newAttention(b *Builder, name string, c, heads int, dropout float64, gen *autograd.Generator, bias, materialize bool, in, out linearInit) *CausalSelfAttention {
	if c <= 0 || heads <= 0 || c%heads != 0 {
		fail("nn.causal_self_attention", "%s: width %d with %d heads: want a positive width divisible by the heads", name, c, heads)
	}
	a := &CausalSelfAttention{Name: name, C: c, Heads: heads}
	defer releaseOnPanic(a)
	if materialize {
		a.Core = &MaterializedAttention{Drop: NewDropout(b, join(name, "attn_dropout"), dropout, gen)}
	}
	a.Drop = NewDropout(b, join(name, "resid_dropout"), dropout, gen)
	a.Attn = newLinear(b, join(name, "c_attn"), c, 3*c, bias, in)
	a.Proj = newLinear(b, join(name, "c_proj"), c, c, bias, out)
	return a
}

// Forward returns the attention of x (B, T, C) over itself, causally.
func (a *CausalSelfAttention) Forward(x *autograd.Tensor) *autograd.Tensor {
	// D is C/H as built; after head pruning (package prune) H·D < C, and
	// c_attn has 3·H·D outputs.
	return SelfAttention(a.Name, x, a.C, a.Heads, a.Attn.Out/(3*a.Heads), a.Attn, a.Proj, a.Drop, a.Core)
}

// Params returns c_attn's then c_proj's parameters.
func (a *CausalSelfAttention) Params() []Param {
	var ps []Param
	for _, l := range []*Linear{a.Attn, a.Proj} {
		if l != nil {
			ps = append(ps, l.Params()...)
		}
	}
	return ps
}

// Train switches the residual dropout (and the attention dropout).
func (a *CausalSelfAttention) Train(on bool) {
	if a.Drop != nil {
		a.Drop.Train(on)
	}
	if a.Core != nil && a.Core.Drop != nil {
		a.Core.Drop.Train(on)
	}
}

// MLP is GPT-2's feed-forward block over x (…, C): Linear (C, Hidden), the
// tanh approximation of GELU, Linear (Hidden, C), dropout. Names follow
// nanoGPT: c_fc, c_proj, dropout.
//
// Memory, with rows = numel(x)/C and s the dtype's size:
//   - parameters: (2·C·Hidden + Hidden + C)·s bytes (2·C·Hidden·s without
//     bias);
//   - forward leaves rows·(2·Hidden + C)·s bytes of activations: c_fc's
//     output (saved by GELU), GELU's output (saved by c_proj) and the
//     result. It saves x, alive already. Without a recorded graph only the
//     result remains.
type MLP struct {
	Name      string
	C, Hidden int
	FC        *Linear  // c_fc: (Hidden, C)
	Proj      *Linear  // c_proj: (C, Hidden)
	Drop      *Dropout // dropout
}

// NewMLP makes an MLP of width c and hidden width hidden (GPT-2: 4·c),
// with dropout probability dropout (masks from gen, nil allowed when
// dropout is 0) and biases when bias is set, initialised like PyTorch's
// Linear; NewGPT uses GPT-2's initialisation instead.
func NewMLP(b *Builder, name string, c, hidden int, dropout float64, gen *autograd.Generator, bias bool) *MLP {
	return newMLP(b, name, c, hidden, dropout, gen, bias, linearInit{}, linearInit{})
}

func newMLP(b *Builder, name string, c, hidden int, dropout float64, gen *autograd.Generator, bias bool, in, out linearInit) *MLP {
	if c <= 0 || hidden <= 0 {
		fail("nn.mlp", "%s: width %d, hidden width %d: want both > 0", name, c, hidden)
	}
	m := &MLP{Name: name, C: c, Hidden: hidden}
	defer releaseOnPanic(m)
	m.Drop = NewDropout(b, join(name, "dropout"), dropout, gen)
	m.FC = newLinear(b, join(name, "c_fc"), c, hidden, bias, in)
	m.Proj = newLinear(b, join(name, "c_proj"), hidden, c, bias, out)
	return m
}

// Forward returns the block applied to x (…, C).
func (m *MLP) Forward(x *autograd.Tensor) *autograd.Tensor {
	return FeedForward(m.Name, x, m.FC, m.Proj, m.Drop)
}

// Params returns c_fc's then c_proj's parameters.
func (m *MLP) Params() []Param {
	var ps []Param
	for _, l := range []*Linear{m.FC, m.Proj} {
		if l != nil {
			ps = append(ps, l.Params()...)
		}
	}
	return ps
}

// Train switches the dropout.
func (m *MLP) Train(on bool) {
	if m.Drop != nil {
		m.Drop.Train(on)
	}
}
