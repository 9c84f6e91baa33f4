package nn

import (
	"math"

	"github.com/headroom-ml/headroom/autograd"
)

// MaterializedAttention is causal attention computed op by op, as GPT-2
// and nanoGPT without flash attention do: w = softmax(q·kᵀ/√D with the
// future masked to −∞), then Drop (the attention dropout, nil: none), then
// w·v. The two products are autograd.BMM, which checkpoint's DefaultPolicy
// recomputes (Megatron's selective recomputation of the core attention).
//
// Memory, for q, k, v (B, H, T, D) of dtype size s: forward saves the
// softmax's output (B·H·T²·s; F32 under autocast), the second product's
// operand when it is another tensor (B·H·T² more: the dropout's output
// when Drop is set, or its 16-bit cast under autocast), a (T, T) F32
// causal mask (4·T², saved by the fill) and q, k, v (alive already);
// inside it the scores, scaled and filled, briefly hold two more
// B·H·T²·s. The fused autograd.ScaledDotProductAttention saves none of
// the T² terms.
type MaterializedAttention struct {
	Drop *Dropout // attn_dropout; nil: none
}

// Attend returns the attention (B, H, T, D) of q, k, v (B, H, T, D).
func (m *MaterializedAttention) Attend(q, k, v *autograd.Tensor) *autograd.Tensor {
	if q.Rank() != 4 {
		fail("nn.materialized_attention", "q %v: want (B, H, T, D)", q.Shape())
	}
	t, d := q.Dim(2), q.Dim(3)
	kt := k.Transpose(2, 3)
	s := autograd.BMM(q, kt)
	kt.Release()
	ss := s.Scale(1 / math.Sqrt(float64(d)))
	s.Release()
	mask := causalMask(q, t)
	f := autograd.MaskedFill(ss, mask, math.Inf(-1))
	release(nil, ss, mask)
	w := autograd.Softmax(f, -1)
	f.Release()
	w = dropout(m.Drop, w)
	y := autograd.BMM(w, v)
	w.Release()
	return y
}

// causalMask returns a (t, t) F32 tensor owned by like's scope, 1 where a
// column is after its row (the future a causal attention masks), else 0,
// made from a t-element index (4·t bytes of host memory for the call).
func causalMask(like *autograd.Tensor, t int) *autograd.Tensor {
	idx := make([]float32, t)
	for i := range idx {
		idx[i] = float32(i)
	}
	ix := like.Scope().FromFloat32s(like.Device(), []int{t}, idx)
	row, col := ix.View(t, 1), ix.View(1, t)
	m := col.Gt(row)
	release(nil, ix, row, col)
	return m
}
