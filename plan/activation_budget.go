package plan

import (
	"fmt"
	"strings"

	"github.com/headroom-ml/headroom/device"

	"github.com/headroom-ml/headroom/checkpoint"
)

// ActivationPlan is what an ActivationBudget chose: a mode per GPT block
// (checkpoint.ModeBudget, measured on meta from this step) and the
// activation peak the choice was planned at.
type ActivationPlan struct {
	Budget    int64                 `json:"budget_bytes"`
	Peak      int64                 `json:"planned_activation_peak_bytes"`
	Decisions []checkpoint.Decision `json:"decisions"`
}

// predictActivationBudget solves c.ActivationBudget on meta devices, then
// predicts (or measures) c with the modes chosen.
func predictActivationBudget(c Config) (*Prediction, error) {
	c, m, err := c.resolved()
	if err != nil {
		return nil, err
	}
	if m.Kind != "gpt" || c.TP > 1 || c.PP > 1 {
		return nil, fmt.Errorf("activation budget for %s, tp %d, pp %d: want a GPT on one tensor/pipeline rank (FLOPs are counted for GPT blocks)", m.Name, c.TP, c.PP)
	}
	g := m.GPT
	micro, t, d := int64(c.Batch/(c.Ranks*c.Accum)), int64(c.Seq), int64(g.Width)
	flops := make([]int64, g.Layers)
	for i := range flops { // four Linears, then q·kᵀ and the weights times v
		flops[i] = 2*micro*t*12*d*d + 4*micro*t*t*d
	}
	mb := &checkpoint.ModeBudget{Bytes: c.ActivationBudget, FLOPs: flops, Rates: checkpoint.DefaultRates,
		Peak: func(ms []checkpoint.Mode) (int64, error) {
			cc := c
			cc.measure, cc.activationModes = false, ms
			p, err := Predict(cc)
			if err != nil {
				return 0, err
			}
			return p.Ranks[0].Activation, nil
		}}
	ds, peak, err := mb.Solve()
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	c.activationModes = checkpoint.Modes(ds)
	p, err := Predict(c)
	if err != nil {
		return nil, err
	}
	p.ActivationBudget = &ActivationPlan{Budget: c.ActivationBudget, Peak: peak, Decisions: ds}
	return p, nil
}

// Table renders the decisions: per layer its mode, the bytes it keeps,
// recomputes and offloads (of the most any mode frees for it), and the
// estimated extra time; then the planned peak.
func (a *ActivationPlan) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "activation budget %s: planned activation peak %s\n", device.FormatBytes(a.Budget), device.FormatBytes(a.Peak))
	fmt.Fprintf(&b, "%-6s %-10s %12s %12s %12s %12s\n", "layer", "mode", "kept", "recomputed", "offloaded", "est. extra")
	var extra float64
	for _, d := range a.Decisions {
		r, o := d.Bytes()
		extra += d.Extra
		fmt.Fprintf(&b, "%-6d %-10s %12s %12s %12s %10.3gms\n", d.Layer, d.Mode, device.FormatBytes(d.Held), device.FormatBytes(r), device.FormatBytes(o), 1e3*d.Extra)
	}
	fmt.Fprintf(&b, "est. extra time per step %.3gms (checkpoint.DefaultRates)\n", 1e3*extra)
	return b.String()
}
