package plan

import (
	"fmt"

	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// Adam8bitName is the optimizer name of AdamW with 8-bit block-quantised
// moments (optim.NewAdamW8bit).
const Adam8bitName = "adamw8bit"

// check8bit refuses the configurations an 8-bit AdamW is not planned for:
// data parallelism over a tensor- or pipeline-parallel mesh. With
// amp-params it keeps F32 master weights; with ranks (ZeRO 0–3, offload)
// each rank quantises its own pieces (parallel.NewAdamW8bit).
func (c Config) check8bit() error {
	if c.Optimizer == Adam8bitName && c.Ranks > 1 && c.split() {
		return fmt.Errorf("optimizer %s with %d ranks and tp %d, pp %d: not planned for data parallelism over a split model; plan it with ranks 1 or without tp and pp", Adam8bitName, c.Ranks, c.TP, c.PP)
	}
	return nil
}

// newAdamW8bit makes the 8-bit AdamW with the same hyperparameters as the
// planner's AdamW and the default quantisation.
func newAdamW8bit(params []nn.Param, adamw optim.AdamConfig) (optim.Optimizer, error) {
	return optim.NewAdamW8bit(params, adamw, optim.Quant8Config{})
}
