package checkpoint

import (
	"fmt"
	"strings"

	"github.com/headroom-ml/headroom/device"
)

// Table renders a ModeBudget's decisions: per layer its mode, the bytes
// it keeps (of the most any mode frees for it), recomputes and offloads,
// and its estimated extra time; then the total and the rates the times
// were estimated at (from says where they came from: "measured on cpu:0",
// "checkpoint.DefaultRates").
func Table(budget, peak int64, ds []Decision, r Rates, from string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "activation budget %s: planned activation peak %s\n", device.FormatBytes(budget), device.FormatBytes(peak))
	fmt.Fprintf(&b, "%-6s %-10s %12s %12s %12s %12s\n", "layer", "mode", "kept", "recomputed", "offloaded", "est. extra")
	var extra float64
	for _, d := range ds {
		re, o := d.Bytes()
		extra += d.Extra
		fmt.Fprintf(&b, "%-6d %-10s %12s %12s %12s %10.3gms\n", d.Layer, d.Mode, device.FormatBytes(d.Held), device.FormatBytes(re), device.FormatBytes(o), 1e3*d.Extra)
	}
	fmt.Fprintf(&b, "est. extra time per step %.3gms at %.3g FLOP/s, %.3g B/s pointwise, %.3g B/s copy (%s)\n", 1e3*extra, r.FLOPS, r.Memory, r.Copy, from)
	return b.String()
}

// Check refuses rates that are not positive and finite, naming them.
func (r Rates) Check() error {
	for _, v := range []float64{r.FLOPS, r.Memory, r.Copy} {
		if !(v > 0 && v < 1e300) {
			return fmt.Errorf("checkpoint rates %+v: want positive, finite FLOP/s and B/s", r)
		}
	}
	return nil
}

// Or returns r with d's rate in each field r leaves 0.
func (r Rates) Or(d Rates) Rates {
	if r.FLOPS == 0 {
		r.FLOPS = d.FLOPS
	}
	if r.Memory == 0 {
		r.Memory = d.Memory
	}
	if r.Copy == 0 {
		r.Copy = d.Copy
	}
	return r
}
