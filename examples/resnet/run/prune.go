package run

import (
	"fmt"
	"io"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/data"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/prune"
	"github.com/headroom-ml/headroom/train"
)

// pruned is the report's record of --prune.
type pruned struct {
	Fraction      float64      `json:"fraction"`
	AccuracyFirst float64      `json:"accuracy_before"`
	FineTune      int          `json:"finetune_steps"`
	Report        prune.Report `json:"report"`
	loss          float64
}

// pruneAndFineTune evaluates the trained model, removes --prune of the
// channels inside each block (lowest L1 norm), replaces the optimizer
// (its state belonged to the old tensors) and fine-tunes. The device's
// peaks are reset after pruning, so the report's peaks are the pruned
// model's.
func pruneAndFineTune(c *Config, out io.Writer, dev *device.Device, model *nn.ResNet, opt **optim.SGD,
	st *train.Stepper, step func(*autograd.Scope, int) *autograd.Tensor, testSet *data.Images, ds dataset, pdt dtype.DType) (pruned, error) {
	var p pruned
	acc, err := evaluate(c, dev, model, testSet, ds, pdt)
	if err != nil {
		return p, err
	}
	rep, err := prune.ResNet(model, c.Prune, prune.Options{Height: testSet.H, Width: testSet.W})
	if err != nil {
		return p, err
	}
	(*opt).Release()
	o, err := optim.NewSGD(model.Params(), optim.SGDConfig{
		LR: c.LR / 5, Momentum: c.Momentum, Nesterov: c.Momentum > 0, WeightDecay: c.WeightDecay, MasterWeights: c.AMPParams,
	})
	if err != nil {
		return p, err
	}
	*opt = o
	n := c.FineTune
	if n == 0 {
		n = min(200, max(1, st.Steps()/4))
	}
	st.Opt, st.Schedule = o, optim.CosineWarmup{Base: c.LR / 5, Total: n}
	st.SetSteps(0)
	dev.ResetPeak()
	fmt.Fprintf(out, "pruned %.0f%% of the channels inside each block (test accuracy before: %.2f%%):\n%s\n", 100*c.Prune, 100*acc, rep.Summary())
	prog := train.NewProgress(out, n, "fine-tune")
	for i := range n {
		if p.loss, _, err = st.Step(step); err != nil {
			prog.Done()
			return p, fmt.Errorf("fine-tune step %d: %w", i, err)
		}
		prog.Step(i, p.loss, 0, dev)
	}
	prog.Done()
	p.Fraction, p.AccuracyFirst, p.FineTune, p.Report = c.Prune, acc, n, rep
	return p, nil
}
