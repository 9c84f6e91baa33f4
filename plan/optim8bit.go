package plan

import (
	"fmt"

	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// Adam8bitName is the optimizer name of AdamW with 8-bit block-quantised
// moments (optim.NewAdamW8bit).
const Adam8bitName = "adamw8bit"

// check8bit refuses the configurations an 8-bit AdamW cannot run: data
// parallelism (it is no parallel.Optimizer, so it cannot be sharded or
// step a DDP engine). With amp-params it keeps F32 master weights.
func (c Config) check8bit() error {
	if c.Optimizer == Adam8bitName && c.Ranks > 1 {
		return fmt.Errorf("optimizer %s with %d ranks: it cannot step a data-parallel engine or shard its state; plan it with ranks 1", Adam8bitName, c.Ranks)
	}
	return nil
}

// newAdamW8bit makes the 8-bit AdamW with the same hyperparameters as the
// planner's AdamW and the default quantisation.
func newAdamW8bit(params []nn.Param, adamw optim.AdamConfig) (optim.Optimizer, error) {
	return optim.NewAdamW8bit(params, adamw, optim.Quant8Config{})
}
