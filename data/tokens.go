package data

import (
	"fmt"
	"math/rand/v2"
)

// Tokens is a stream of token ids from a vocabulary of any size; it costs 4
// bytes per token.
type Tokens struct {
	IDs  []int32
	Size int // vocabulary size: every id is in [0, Size)
}

// SyntheticBranching is how many successors each token has in the chain
// SyntheticTokens samples from.
const SyntheticBranching = 4

// SyntheticTokens returns n seeded tokens in [0, vocab) from a fixed random
// Markov chain, a stand-in for text with known structure: each token has
// min(SyntheticBranching, vocab) distinct successors, chosen at random
// (from the seed), and each next token is one of its predecessor's
// successors, uniformly. The first token is uniform. A model that has
// learned the chain reaches a cross-entropy of ln(min(4, vocab)) nats per
// token (ln 4 ≈ 1.386); one that predicts uniformly, ln(vocab). It panics
// unless n and vocab are positive.
func SyntheticTokens(n, vocab int, seed uint64) *Tokens {
	if n <= 0 || vocab <= 0 {
		panic(fmt.Sprintf("data.SyntheticTokens(n=%d, vocab=%d): both must be positive", n, vocab))
	}
	src := rand.NewPCG(seed, streamSyntheticTokens)
	k := min(SyntheticBranching, vocab)
	succ := syntheticSuccessors(src, vocab, k)
	ids := make([]int32, n)
	cur := int32(below(src, uint64(vocab)))
	ids[0] = cur
	for i := 1; i < n; i++ {
		cur = succ[int(cur)*k+int(below(src, uint64(k)))]
		ids[i] = cur
	}
	return &Tokens{IDs: ids, Size: vocab}
}

// syntheticSuccessors draws, for each of vocab tokens, k distinct successors:
// (vocab, k) row-major.
func syntheticSuccessors(src *rand.PCG, vocab, k int) []int32 {
	succ := make([]int32, vocab*k)
	for v := range vocab {
		row := succ[v*k : (v+1)*k]
		for j := range row {
		draw:
			for {
				c := int32(below(src, uint64(vocab)))
				for _, p := range row[:j] {
					if p == c {
						continue draw
					}
				}
				row[j] = c
				break
			}
		}
	}
	return succ
}

// Len returns the number of tokens.
func (s *Tokens) Len() int { return len(s.IDs) }

// Vocab returns the vocabulary size.
func (s *Tokens) Vocab() int { return s.Size }

// Split cuts the stream into a training part and a validation part, the
// last ⌊valFraction·Len⌋ tokens, sharing its memory. It panics unless
// 0 ≤ valFraction ≤ 1.
func (s *Tokens) Split(valFraction float64) (train, val *Tokens) {
	cut := splitPoint("Tokens", len(s.IDs), valFraction)
	return &Tokens{IDs: s.IDs[:cut:cut], Size: s.Size}, &Tokens{IDs: s.IDs[cut:], Size: s.Size}
}

// Batch draws b windows of t+1 consecutive tokens, as Text.Batch does.
func (s *Tokens) Batch(rng *rand.Rand, b, t int) (x, y []int64) {
	return windows("Tokens", s.IDs, rng, b, t)
}
