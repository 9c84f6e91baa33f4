package parallel

import (
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// NewAdamW8bit returns the 8-bit AdamW (optim.NewAdamW8bit) for d; see
// NewAdam. Under stages 1–3 each rank quantises its own pieces: a piece
// ("bucket<k>.rank<r>", ⌈u_k/N⌉ elements of bucket k) is one parameter to
// the 8-bit optimizer, so its blocks of q.Block elements start at the
// piece's first element, and a piece shorter than q.MinElems keeps F32
// state. The block layout therefore depends on the number of ranks and on
// the buckets: the update equals the one-device run's bit for bit when
// every piece boundary falls on a block boundary of the one-device layout
// (a bucket holding one parameter whose ⌈n/N⌉ is a multiple of q.Block),
// and otherwise differs only by where the absmax blocks are cut — the
// same quantisation error bound per block. The state per rank is that of
// its pieces: 2·piece + 8·⌈piece/Block⌉ bytes each (and 4·piece more for
// F32 masters of 16-bit parameters), about 1/N of the one-device state.
func NewAdamW8bit(d *DDP, c optim.AdamConfig, q optim.Quant8Config) (*Optimizer, error) {
	return d.optimizer(func(ps []nn.Param, offloaded bool) (optim.Optimizer, error) {
		if offloaded {
			c.MasterWeights = false
		}
		return optim.NewAdamW8bit(ps, c, q)
	})
}
