package main

import (
	"flag"

	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/train"
)

// activationBudgetFlag parses --activation-budget ("": none).
func activationBudgetFlag(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := device.ParseBytes(s)
	if err != nil || n <= 0 {
		return 0, train.Usagef("--activation-budget %q: want a positive size such as 2GiB", s)
	}
	return n, nil
}

// registerRates adds --activation-budget's cost rates to fs (0: the
// planner's checkpoint.DefaultRates).
func registerRates(fs *flag.FlagSet, r *checkpoint.Rates) {
	fs.Float64Var(&r.FLOPS, "flop-rate", 0, "with --activation-budget: the matmul rate recomputation is costed at, FLOP/s (0: 1e11)")
	fs.Float64Var(&r.Memory, "memory-rate", 0, "with --activation-budget: the pointwise rate selective recomputation is costed at, B/s (0: 1e10)")
	fs.Float64Var(&r.Copy, "copy-rate", 0, "with --activation-budget: the device↔host copy rate offload is costed at, B/s (0: 1e10)")
}

// ratesFlag checks the rates (0 keeps a default).
func ratesFlag(r checkpoint.Rates) (checkpoint.Rates, error) {
	if err := r.Or(checkpoint.DefaultRates).Check(); err != nil {
		return r, train.Usagef("--flop-rate %g, --memory-rate %g, --copy-rate %g: want positive finite rates (0: the default)", r.FLOPS, r.Memory, r.Copy)
	}
	return r, nil
}
