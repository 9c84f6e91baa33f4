package main

import (
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
