package plan

import (
	"fmt"

	"github.com/headroom-ml/headroom/checkpoint"
)

// ActivationPlan is what an ActivationBudget chose: a mode per GPT block
// (checkpoint.ModeBudget, measured on meta from this step) and the
// activation peak the choice was planned at.
type ActivationPlan struct {
	Budget    int64                 `json:"budget_bytes"`
	Peak      int64                 `json:"planned_activation_peak_bytes"`
	Decisions []checkpoint.Decision `json:"decisions"`
	// Rates are the rates the extra times were estimated at.
	Rates checkpoint.Rates `json:"rates"`
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
	flops, sel := make([]int64, m.GPT.Layers), make([]int64, m.GPT.Layers)
	for i := range flops {
		micro := c.Batch / (c.Ranks * c.Accum)
		flops[i], sel[i] = m.GPT.BlockFLOPs(micro, c.Seq), m.GPT.SelectiveFLOPs(micro, c.Seq)
	}
	rates := c.Rates.Or(checkpoint.DefaultRates)
	if err := rates.Check(); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	mb := &checkpoint.ModeBudget{Bytes: c.ActivationBudget, FLOPs: flops, SelectiveFLOPs: sel, Rates: rates,
		Peak: func(ms []checkpoint.Mode) (int64, error) {
			// Each choice is planned without the capacity: a step that runs
			// out of memory on the way would report a truncated peak.
			cc := c
			cc.measure, cc.activationModes, cc.Capacity = false, ms, 0
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
	p.ActivationBudget = &ActivationPlan{Budget: c.ActivationBudget, Peak: peak, Decisions: ds, Rates: rates}
	return p, nil
}

// Table renders the decisions (checkpoint.Table).
func (a *ActivationPlan) Table() string {
	return checkpoint.Table(a.Budget, a.Peak, a.Decisions, a.Rates, "rates: checkpoint.DefaultRates unless --flop-rate, --memory-rate or --copy-rate")
}
