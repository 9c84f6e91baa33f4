package run

import (
	"flag"

	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// adamw8bit is --optimizer's name of AdamW with 8-bit block-quantised
// moments (optim.NewAdamW8bit).
const adamw8bit = "adamw8bit"

// registerOptimizer registers --optimizer.
func (c *Config) registerOptimizer(fs *flag.FlagSet) {
	fs.StringVar(&c.Optimizer, "optimizer", "adamw", "adamw, or adamw8bit: m and v of every parameter of ≥ 4096 elements in 8 bits with an f32 absmax per 2048 (about 0.25× the state; with --amp-params f32 masters besides; with --ranks, --tp or --pp each rank quantises its own shard)")
}

// checkOptimizer refuses an unknown --optimizer.
func (c *Config) checkOptimizer() error {
	return train.Want(c.Optimizer == "adamw" || c.Optimizer == adamw8bit, "optimizer", c.Optimizer, "adamw or adamw8bit")
}

// newOptimizer makes the run's AdamW (β₂ 0.99, the flags' weight decay):
// over d when data-parallel, else over ps, 8-bit with --optimizer adamw8bit.
func (c *Config) newOptimizer(ps []nn.Param, d *parallel.DDP, master bool) (optim.Optimizer, error) {
	cfg := optim.AdamConfig{LR: c.LR, Beta2: 0.99, WeightDecay: c.WeightDecay, MasterWeights: master}
	return train.NewAdamW(ps, d, cfg, c.Optimizer == adamw8bit)
}
