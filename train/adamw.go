package train

import (
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
)

// NewAdamW returns the examples' AdamW of c: over d's replica when
// data-parallel (d not nil; its ranks' states per parallel.NewAdamW), else
// over ps; with eightBit the 8-bit one (optim.NewAdamW8bit: m and v of
// every parameter of ≥ 4096 elements as 8-bit codes with an F32 absmax
// per 2048, 2n + 8·⌈n/2048⌉ bytes instead of 8n).
func NewAdamW(ps []nn.Param, d *parallel.DDP, c optim.AdamConfig, eightBit bool) (optim.Optimizer, error) {
	switch {
	case d != nil && eightBit:
		return parallel.NewAdamW8bit(d, c, optim.Quant8Config{})
	case d != nil:
		return parallel.NewAdamW(d, c)
	case eightBit:
		return optim.NewAdamW8bit(ps, c, optim.Quant8Config{})
	}
	return optim.NewAdamW(ps, c)
}
