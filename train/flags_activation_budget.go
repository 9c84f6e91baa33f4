package train

import (
	"flag"
	"fmt"
	"io"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/nn"
)

// BlockFLOPs is implemented by a Replica whose model's RunBlocks stack
// can say its layers' forward matrix-product FLOPs per micro-batch (one
// entry per layer RunBlocks runs; checkpoint.ModeBudget's FLOPs):
// --activation-budget costs recomputation with them.
type BlockFLOPs interface {
	BlockFLOPs() []int64
}

// SelectiveFLOPs is implemented by a BlockFLOPs Replica whose blocks'
// selective recomputation runs some products again (one entry per layer;
// checkpoint.ModeBudget's SelectiveFLOPs): a materialized attention's.
type SelectiveFLOPs interface {
	SelectiveFLOPs() []int64
}

// budgetFlags are --activation-budget's flags (ActivationFlags).
type budgetFlags struct {
	// ActivationBudget (--activation-budget) chooses keep, selective
	// recomputation, recomputation or offload per block
	// (checkpoint.ModeBudget, solved on meta from the program's own step
	// before training) so the activation peak stays under this size.
	ActivationBudget string
	// Rates override the measured cost rates (--flop-rate, --memory-rate,
	// --copy-rate; 0: measured on the run's device, checkpoint.MeasureRates).
	Rates checkpoint.Rates

	budget *BudgetPlan // the solved plan, once planned
}

// BudgetPlan is what --activation-budget chose before training.
type BudgetPlan struct {
	Budget    int64                 `json:"budget_bytes"`
	Peak      int64                 `json:"planned_activation_peak_bytes"`
	Decisions []checkpoint.Decision `json:"decisions"`
	Rates     checkpoint.Rates      `json:"rates"`
	// RatesFrom says where the rates came from.
	RatesFrom string `json:"rates_from"`
}

// registerBudget adds the budget flags to fs.
func (b *budgetFlags) registerBudget(fs *flag.FlagSet) {
	fs.StringVar(&b.ActivationBudget, "activation-budget", "", "keep, selective recomputation, recomputation or offload to cpu:100+r per block, planned on meta from this program's step, so the activation peak stays under this size, e.g. 64MiB (not with --checkpoint, --checkpoint-budget, --selective or --offload-activations)")
	fs.Float64Var(&b.Rates.FLOPS, "flop-rate", 0, "with --activation-budget: the matmul rate recomputation is costed at, FLOP/s (0: measured on the device at start)")
	fs.Float64Var(&b.Rates.Memory, "memory-rate", 0, "with --activation-budget: the pointwise rate selective recomputation is costed at, B/s (0: measured)")
	fs.Float64Var(&b.Rates.Copy, "copy-rate", 0, "with --activation-budget: the device↔host copy rate offload is costed at, B/s (0: measured)")
}

// budgetBytes parses --activation-budget (0: none).
func (c *Common) budgetBytes() (int64, error) {
	if c.ActivationBudget == "" {
		return 0, nil
	}
	n, err := device.ParseBytes(c.ActivationBudget)
	if err != nil || n <= 0 {
		return 0, Usagef("--activation-budget %s: want a positive size such as 64MiB", c.ActivationBudget)
	}
	return n, nil
}

// checkBudget checks --activation-budget and its rates against the other
// flags.
func (c *Common) checkBudget() error {
	if _, err := c.budgetBytes(); err != nil {
		return err
	}
	if err := c.Rates.Or(checkpoint.DefaultRates).Check(); err != nil {
		return Usagef("--flop-rate %g, --memory-rate %g, --copy-rate %g: want positive finite rates (0: measured)", c.Rates.FLOPS, c.Rates.Memory, c.Rates.Copy)
	}
	switch {
	case c.ActivationBudget == "":
		return nil
	case c.Selective || c.OffloadActivations || c.Checkpoint != "" || c.CheckpointBudget != "":
		return Usagef("--activation-budget %s with --selective, --offload-activations, --checkpoint or --checkpoint-budget: choose one (the budget picks among them per block)", c.ActivationBudget)
	case c.Parallel():
		return Usagef("--activation-budget %s with --ranks, --zero, --offload or --mpi: not available yet (one device)", c.ActivationBudget)
	}
	return nil
}

// budgetBlocks is RunBlocks for --activation-budget: the offload runner
// with the modes planBudget set (every layer kept until then).
func (c *Common) budgetBlocks() (func([]nn.Layer, *autograd.Tensor) *autograd.Tensor, string, error) {
	if err := c.checkBudget(); err != nil {
		return nil, "", err
	}
	return c.activationRunner().forward, "activation budget " + c.ActivationBudget, nil
}

// activationRunner returns the shared offload runner (Register sets it up).
func (c *Common) activationRunner() *actOffload {
	if c.acts == nil {
		c.acts = newActOffload()
	}
	return c.acts
}

// planBudget solves --activation-budget before training on dev: it builds
// p's replica on a meta device, measures the activation peak of its
// training step (Stepper.Step, one step) with each block in each mode
// (checkpoint.ModeBudget), sets the modes every replica built afterwards
// runs, and prints the decision table to out. Nothing without the flag.
func planBudget[R Replica](c *Common, out io.Writer, p *Program[R], dev *device.Device) error {
	n, err := c.budgetBytes()
	if err != nil || n == 0 {
		return err
	}
	plan, err := solveBudget(c, p, n, dev)
	if err != nil {
		return err
	}
	c.budget = plan
	c.activationRunner().setModes(checkpoint.Modes(plan.Decisions))
	fmt.Fprint(out, checkpoint.Table(plan.Budget, plan.Peak, plan.Decisions, plan.Rates, plan.RatesFrom))
	return nil
}

// solveBudget runs the solver on a meta replica of p.
func solveBudget[R Replica](c *Common, p *Program[R], n int64, dev *device.Device) (*BudgetPlan, error) {
	md := meta.New(0, device.Options{})
	defer md.Close()
	mc := *c
	mc.Init = "" // values do not matter on meta
	r, err := newRun(&mc, io.Discard, p, md, nil)
	if err != nil {
		return nil, err
	}
	defer r.release()
	fl, ok := any(r.R).(BlockFLOPs)
	if !ok {
		return nil, Usagef("--activation-budget: %s does not count its blocks' FLOPs: not available yet", p.Name)
	}
	rates, from := c.budgetRates(dev)
	acts := c.activationRunner()
	defer acts.drop(md)
	mb := &checkpoint.ModeBudget{Bytes: n, FLOPs: fl.BlockFLOPs(), Rates: rates,
		Peak: func(ms []checkpoint.Mode) (int64, error) {
			acts.setModes(ms)
			md.ResetPeak()
			if _, _, err := r.Stepper.Step(r.R.Forward); err != nil {
				return 0, err
			}
			return Peaks(md.Stats()).Activation, nil
		}}
	if sf, ok := any(r.R).(SelectiveFLOPs); ok {
		mb.SelectiveFLOPs = sf.SelectiveFLOPs()
	}
	ds, peak, err := mb.Solve()
	if err != nil {
		return nil, fmt.Errorf("--activation-budget %s: %w", c.ActivationBudget, err)
	}
	return &BudgetPlan{Budget: n, Peak: peak, Decisions: ds, Rates: rates, RatesFrom: from}, nil
}

// budgetRates returns --activation-budget's rates: the flags', the rest
// measured on dev (checkpoint.MeasureRates, to a host of dev's run), and
// says which.
func (c *Common) budgetRates(dev *device.Device) (checkpoint.Rates, string) {
	r := c.Rates
	if r.FLOPS != 0 && r.Memory != 0 && r.Copy != 0 {
		return r, "rates from the flags"
	}
	probe := dev
	if dev.Kind() == "cpu" { // a private cpu device: the run's statistics stay the run's
		probe = cpu.New(99, device.Options{})
		defer probe.Close()
	}
	host := cpu.New(199, device.Options{})
	defer host.Close()
	m := checkpoint.MeasureRates(probe, host)
	if probe == dev { // the probe's blocks leave the run's device as they came
		dev.EmptyCache()
		dev.ResetPeak()
	}
	return r.Or(m), "rates not given measured on " + dev.Kind() + " at start"
}

// reportBudget records the plan in rep.Extra["activation_budget"].
func (c *Common) reportBudget(rep *Report) {
	if c.budget == nil {
		return
	}
	if rep.Extra == nil {
		rep.Extra = map[string]any{}
	}
	rep.Extra["activation_budget"] = c.budget
}
