package plan

import (
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// Adam8bitName is the optimizer name of AdamW with 8-bit block-quantised
// moments (optim.NewAdamW8bit).
// Every configuration but LoRA plans with it: with amp-params it keeps F32
// master weights, with ranks (ZeRO 0–3, offload) each rank quantises its
// own pieces (parallel.NewAdamW8bit), and over a tensor- or
// pipeline-parallel mesh each rank its own parameter shards.
const Adam8bitName = "adamw8bit"

// newAdamW8bit makes the 8-bit AdamW with the same hyperparameters as the
// planner's AdamW and the default quantisation.
func newAdamW8bit(params []nn.Param, adamw optim.AdamConfig) (optim.Optimizer, error) {
	return optim.NewAdamW8bit(params, adamw, optim.Quant8Config{})
}
