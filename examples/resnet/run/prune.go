package run

import (
	"fmt"
	"io"

	"github.com/headroom-ml/headroom/data"
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
func pruneAndFineTune(c *Config, out io.Writer, r *train.Run[*replica], testSet *data.Images, ds dataset) (pruned, error) {
	var p pruned
	model, st := r.R.model, r.Stepper
	acc, err := evaluate(c, r.Dev, model, testSet, ds, r.R.pdt)
	if err != nil {
		return p, err
	}
	rep, err := prune.ResNet(model, c.Prune, prune.Options{Height: testSet.H, Width: testSet.W})
	if err != nil {
		return p, err
	}
	r.Opt.Release()
	if r.Opt, err = optim.NewSGD(model.Params(), sgdConfig(c, c.LR/5)); err != nil {
		r.Opt = nil
		return p, err
	}
	n := c.FineTune
	if n == 0 {
		n = min(200, max(1, st.Steps()/4))
	}
	st.Opt, st.Schedule = r.Opt, optim.CosineWarmup{Base: c.LR / 5, Total: n}
	st.SetSteps(0)
	r.Dev.ResetPeak()
	fmt.Fprintf(out, "pruned %.0f%% of the channels inside each block (test accuracy before: %.2f%%):\n%s\n", 100*c.Prune, 100*acc, rep.Summary())
	if p.loss, err = train.RunSteps(out, "fine-tune", st, n, c.Batch, r.Dev, r.R.Forward); err != nil {
		return p, err
	}
	p.Fraction, p.AccuracyFirst, p.FineTune, p.Report = c.Prune, acc, n, rep
	return p, nil
}
