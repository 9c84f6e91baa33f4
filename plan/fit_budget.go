package plan

import (
	"errors"

	"github.com/headroom-ml/headroom/checkpoint"
)

// budgetTries bounds fitBudget's shrinking of the budget.
const budgetTries = 4

// budgetProbe runs c at one batch under the activation budget that the
// capacity leaves (Fit's "activation budget" technique): the plain step
// is planned without a capacity, the budget is the capacity less what the
// step holds besides activations at its allocated peak, and the step is
// solved (checkpoint.ModeBudget) and run under the capacity; while it does
// not fit, the budget shrinks by the overshoot (at most budgetTries
// times). A budget no mode choice meets does not fit.
func budgetProbe(c Config) probe {
	return func(b int) (bool, int64, error) {
		c.Batch = b
		free := c
		free.Capacity, free.fitBudget = 0, false
		p, err := Predict(free)
		if err != nil {
			return false, 0, err
		}
		r := p.Ranks[0]
		budget := c.Capacity - (r.AllocatedPeak - r.AtPeak.Activation)
		for range budgetTries {
			if budget <= 0 {
				return false, 0, nil
			}
			cc := c
			cc.fitBudget, cc.ActivationBudget = false, budget
			q, err := Predict(cc)
			var be *checkpoint.BudgetError
			if errors.As(err, &be) {
				return false, 0, nil
			}
			if err != nil {
				return false, 0, err
			}
			if q.OOM == nil {
				return true, q.Ranks[0].Total, nil
			}
			cc.Capacity = 0
			if q, err = Predict(cc); err != nil {
				return false, 0, err
			}
			budget -= max(q.Ranks[0].AllocatedPeak-c.Capacity, 1)
		}
		return false, 0, nil
	}
}

// budgetable reports whether c can run under an activation budget: a GPT
// on one tensor and pipeline rank.
func budgetable(c Config) bool {
	_, m, err := c.resolved()
	return err == nil && m.Kind == "gpt" && c.TP <= 1 && c.PP <= 1
}
