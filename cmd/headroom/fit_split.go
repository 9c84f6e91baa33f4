package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/headroom-ml/headroom/plan"
	"github.com/headroom-ml/headroom/train"
)

// splitOnlyFlags are the flags fit takes only with --split (without it fit
// chooses the techniques).
var splitOnlyFlags = []string{"amp", "amp-params", "grad-f32", "prune", "checkpoint", "checkpoint-budget", "selective", "fused-loss",
	"accum", "tp", "pp", "dp", "sequence-parallel", "pipe-schedule"}

// givenFlags returns those of names that were set on fs's command line.
func givenFlags(fs *flag.FlagSet, names []string) []string {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var given []string
	for _, n := range names {
		if set[n] {
			given = append(given, n)
		}
	}
	return given
}

// fitSplit is fit --split: plan.FitSplit over --ranks with m's
// techniques, printed as a table or JSON.
func fitSplit(fs *flag.FlagSet, m modelFlags, measure bool, stdout io.Writer) error {
	if given := givenFlags(fs, []string{"tp", "pp", "dp"}); len(given) > 0 {
		return train.Usagef("--split --%s: --split chooses --tp and --pp (and --dp = --ranks / (tp × pp)): give the whole rank count as --ranks", given[0])
	}
	if measure {
		return train.Usagef("--split --measure: not available yet (plan a layout with headroom plan --tp --pp --dp --capacity)")
	}
	target := m.batch
	m.batch = 0 // the default batch, for the checks; each layout rounds the target to its multiple
	c, err := m.config()
	if err != nil {
		return err
	}
	capBytes := c.Capacity
	c.Capacity = 0
	r, err := plan.FitSplit(c, capBytes, target)
	if err != nil {
		return train.Usagef("%v", err)
	}
	if m.json {
		return writeJSON(stdout, r)
	}
	fmt.Fprint(stdout, r.String())
	return nil
}
