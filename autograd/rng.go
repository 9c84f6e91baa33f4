package autograd

// Generator is a counter-based random generator (Philox4x32-10): its whole
// state is a seed and an offset into that seed's stream of 32-bit words, so
// a draw needs no stored bits and any part of the stream can be drawn again
// by restoring (seed, offset). An op that draws n numbers reserves positions
// [offset, offset+n) and the device generates them from (seed, offset) —
// four words per Philox call, with no generator state on the device.
//
// Activation checkpointing relies on this: restore the State a segment's
// forward started from, rerun it, and every dropout mask is identical.
//
// There is no global generator: pass one to the ops that draw. A Generator
// is not safe for concurrent use; give each goroutine (each data-parallel
// rank) its own, seeded differently.
type Generator struct {
	seed, offset uint64
}

// GeneratorState is a Generator's complete state, for saving (it marshals
// to JSON as {"seed": …, "offset": …}) and for replaying draws.
type GeneratorState struct {
	// Seed selects the stream (the Philox key).
	Seed uint64 `json:"seed"`
	// Offset is the position of the next word to be drawn.
	Offset uint64 `json:"offset"`
}

// NewGenerator returns a generator at the start of seed's stream.
func NewGenerator(seed uint64) *Generator { return &Generator{seed: seed} }

// Seed returns the generator's seed.
func (g *Generator) Seed() uint64 { return g.seed }

// State returns the generator's state.
func (g *Generator) State() GeneratorState { return GeneratorState{Seed: g.seed, Offset: g.offset} }

// SetState restores a state returned by State: the draws that follow repeat
// those that followed it.
func (g *Generator) SetState(s GeneratorState) { g.seed, g.offset = s.Seed, s.Offset }

// reserve returns the seed and the current offset for a draw of n words and
// advances the offset by n rounded up to a multiple of 4, so that every
// draw starts on a fresh Philox block (one call per four elements) and no
// two draws share one.
func (g *Generator) reserve(n int) (seed, offset uint64) {
	if n < 0 {
		fail("generator", "reserve of %d numbers", n)
	}
	seed, offset = g.seed, g.offset
	g.offset += (uint64(n) + 3) &^ 3
	return seed, offset
}
