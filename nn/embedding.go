package nn

import "github.com/headroom-ml/headroom/autograd"

// Embedding maps integer indices to rows of a (Vocab, C) table: PyTorch's
// nn.Embedding. idx of any shape (I64 or I32, values in [0, Vocab)) gives
// idx.shape + (C).
//
// Memory, with s the dtype's size:
//   - parameters: Vocab·C·s bytes;
//   - forward leaves numel(idx)·C·s bytes of activations (the rows) and
//     saves idx, alive already. Its gradient is dense, Vocab·C·s bytes.
type Embedding struct {
	Name   string
	Vocab  int
	C      int
	Weight *autograd.Tensor // (Vocab, C)
}

// NewEmbedding makes an Embedding named name with its table drawn from
// N(0, std²); std 0 means 1, PyTorch's default (GPT-2 uses 0.02).
func NewEmbedding(b *Builder, name string, vocab, c int, std float64) *Embedding {
	if std == 0 {
		std = 1
	}
	if vocab <= 0 || c <= 0 || std < 0 {
		fail("nn.embedding", "%s: vocabulary %d, width %d, std %g: want all > 0", name, vocab, c, std)
	}
	e := &Embedding{Name: name, Vocab: vocab, C: c}
	defer releaseOnPanic(e)
	e.Weight = b.Param(join(name, "weight"), vocab, c)
	b.Normal(e.Weight, 0, std)
	return e
}

// Forward returns the rows of the table at idx.
func (e *Embedding) Forward(idx *autograd.Tensor) *autograd.Tensor {
	defer idx.Scope().Within(e.Name)()
	return autograd.Embedding(e.Weight, idx)
}

// Params returns the table.
func (e *Embedding) Params() []Param { return tensors(e.Weight) }

// Train does nothing: Embedding behaves the same in both modes.
func (e *Embedding) Train(bool) {}

// Dropout zeroes each element with probability P in training and scales
// the others by 1/(1−P); in eval (Train(false)) or with P = 0 it is the
// identity. Masks come from Gen (autograd.Dropout: Philox, regenerated in
// backward rather than stored).
//
// Memory: no parameters. Forward in training with P > 0 leaves numel(x)·s
// bytes of activations (the output) and saves nothing; otherwise it
// returns a new handle on x and allocates nothing (0 bytes).
type Dropout struct {
	Name     string
	P        float64
	Gen      *autograd.Generator
	training bool
}

// NewDropout makes a Dropout layer named name, in training mode. b is not
// used (it may be nil); gen may be nil only when p is 0.
func NewDropout(b *Builder, name string, p float64, gen *autograd.Generator) *Dropout {
	if !(p >= 0 && p < 1) {
		fail("nn.dropout", "%s: probability %g: want 0 ≤ p < 1", name, p)
	}
	if p > 0 && gen == nil {
		fail("nn.dropout", "%s: probability %g with a nil generator: pass an *autograd.Generator", name, p)
	}
	return &Dropout{Name: name, P: p, Gen: gen, training: true}
}

// Forward applies dropout to x.
func (d *Dropout) Forward(x *autograd.Tensor) *autograd.Tensor {
	defer x.Scope().Within(d.Name)()
	return autograd.Dropout(x, d.P, d.Gen, d.training)
}

// Params returns nothing.
func (d *Dropout) Params() []Param { return nil }

// Train switches dropout on (training) or off (eval: the identity).
func (d *Dropout) Train(on bool) { d.training = on }

// Training reports the mode.
func (d *Dropout) Training() bool { return d.training }
