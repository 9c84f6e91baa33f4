package run

import (
	"flag"

	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// The --optimizer choices: SGD with Nesterov momentum (the default),
// AdamW, and AdamW with 8-bit block-quantised moments
// (optim.NewAdamW8bit).
const (
	sgd       = "sgd"
	adamw     = "adamw"
	adamw8bit = "adamw8bit"
)

// registerOptimizer registers --optimizer.
func (c *Config) registerOptimizer(fs *flag.FlagSet) {
	fs.StringVar(&c.Optimizer, "optimizer", sgd, "sgd (Nesterov momentum --momentum), adamw, or adamw8bit: AdamW with m and v of every parameter of ≥ 4096 elements in 8 bits and an f32 absmax per 2048; both AdamWs take --weight-decay as decoupled decay and want a smaller --lr than SGD's (e.g. 3e-3)")
}

// checkOptimizer refuses an unknown --optimizer, --momentum with an AdamW
// (which has no such knob), and an AdamW with --prune or --qat (their
// fine-tuning steps are SGD's).
func (c *Config) checkOptimizer() error {
	return train.First(
		train.Want(c.Optimizer == sgd || (c.Prune == 0 && !c.QAT), "optimizer", c.Optimizer, "sgd with --prune or --qat (their fine-tuning steps use SGD)"),
		train.Want(c.Optimizer == sgd || c.Optimizer == adamw || c.Optimizer == adamw8bit, "optimizer", c.Optimizer, "sgd, adamw or adamw8bit"),
		train.Want(c.Optimizer == sgd || !c.Set("momentum"), "momentum", c.Momentum, "--optimizer sgd (AdamW has no momentum flag: β₁ 0.9, β₂ 0.999)"),
	)
}

// newOptimizer makes the flags' optimizer over d when data-parallel, else
// over ps.
func (c *Config) newOptimizer(ps []nn.Param, d *parallel.DDP) (optim.Optimizer, error) {
	if c.Optimizer == sgd {
		if d != nil {
			return parallel.NewSGD(d, sgdConfig(c, c.LR))
		}
		return optim.NewSGD(ps, sgdConfig(c, c.LR))
	}
	cfg := optim.AdamConfig{LR: c.LR, WeightDecay: c.WeightDecay, MasterWeights: c.AMPParams}
	return train.NewAdamW(ps, d, cfg, c.Optimizer == adamw8bit)
}
