package run

import (
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/data"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/quant"
	"github.com/headroom-ml/headroom/train"
)

// quantized is the report's record of --quantize.
type quantized struct {
	Mode            string  `json:"mode"` // dynamic, static or qat
	AccuracyFloat   float64 `json:"accuracy_float"`
	Accuracy        float64 `json:"accuracy_int8"`
	ParamBytesFloat int64   `json:"parameter_bytes_float"`
	ParamBytes      int64   `json:"parameter_bytes_int8"`
	FloatPerSec     float64 `json:"inference_samples_per_sec_float"`
	PerSec          float64 `json:"inference_samples_per_sec_int8"`
	QATSteps        int     `json:"qat_steps,omitempty"`
}

// quantizeAndEvaluate converts the trained model to INT8 — dynamic
// activations, static ones calibrated on --calibrate batches, or after
// --qat fine-tuning — releases the float model and its optimizer, resets
// the device's peaks, and evaluates the INT8 model: the report's peaks are
// then the quantized model's.
func quantizeAndEvaluate(c *Config, out io.Writer, r *train.Run[*replica], testSet *data.Images, ds dataset) (quantized, error) {
	dev, model, loader := r.Dev, r.R.model, r.R.loader
	q := quantized{Mode: "dynamic", ParamBytesFloat: nn.ParamBytes(model)}
	var err error
	began := time.Now()
	if q.AccuracyFloat, err = evaluate(c, dev, model, testSet, ds, r.R.pdt); err != nil {
		return q, err
	}
	q.FloatPerSec = float64(evalCount(c, testSet)) / time.Since(began).Seconds()
	shape := []int{c.Micro(), testSet.C, testSet.H, testSet.W}
	batches := func(n int) iter.Seq[*autograd.Tensor] {
		return func(yield func(*autograd.Tensor) bool) {
			s := autograd.NewScope()
			defer s.Release()
			for range n {
				x, _ := next(loader)
				xs := s.FromFloat32s(dev, shape, x)
				ok := yield(xs)
				s.Release()
				if !ok {
					return
				}
			}
		}
	}
	var qm *quant.ResNet
	switch {
	case c.QAT:
		q.Mode = "qat"
		if qm, q.QATSteps, err = qat(c, out, dev, model, loader, shape); err != nil {
			return q, err
		}
	case c.Calibrate > 0:
		q.Mode = "static"
		qm, err = quant.ConvertResNet(model, quant.Config{Activations: quant.Static}, batches(c.Calibrate))
	default:
		qm, err = quant.ConvertResNet(model, quant.Config{}, nil)
	}
	if err != nil {
		return q, err
	}
	defer nn.Release(qm)
	r.Opt.Release()
	nn.Release(model) // the float model is gone: what is left is the INT8 model
	dev.ResetPeak()
	q.ParamBytes = nn.ParamBytes(qm)
	began = time.Now()
	if q.Accuracy, err = evaluate(c, dev, qm, testSet, ds, dtype.F32); err != nil {
		return q, err
	}
	q.PerSec = float64(evalCount(c, testSet)) / time.Since(began).Seconds()
	fmt.Fprintf(out, "int8 (%s): parameters %s → %s (%.1f%%); test accuracy %.2f%% → %.2f%%; inference %.0f → %.0f samples/s\n",
		q.Mode, device.FormatBytes(q.ParamBytesFloat), device.FormatBytes(q.ParamBytes), 100*float64(q.ParamBytes)/float64(q.ParamBytesFloat),
		100*q.AccuracyFloat, 100*q.Accuracy, q.FloatPerSec, q.PerSec)
	return q, nil
}

// qat fine-tunes the model with fake quantization (SGD with the training
// run's momentum and weight decay, cosine from --lr/50 to 0 over --finetune
// steps, 200 by default) and converts it.
func qat(c *Config, out io.Writer, dev *device.Device, model *nn.ResNet, loader *data.Loader, shape []int) (*quant.ResNet, int, error) {
	p, err := quant.PrepareQATResNet(model, quant.Config{})
	if err != nil {
		return nil, 0, err
	}
	o, err := optim.NewSGD(p.Params(), optim.SGDConfig{LR: c.LR / 50, Momentum: c.Momentum, Nesterov: c.Momentum > 0, WeightDecay: c.WeightDecay})
	if err != nil {
		return nil, 0, err
	}
	defer o.Release()
	n := c.FineTune
	if n == 0 {
		n = 200
	}
	// The learning rate decays from a fiftieth of --lr to 0 like the
	// training run's: a constant one leaves the weights wherever the last
	// batches pushed them.
	st := &train.Stepper{Opt: o, Schedule: optim.CosineWarmup{Base: c.LR / 50, Total: n}}
	if _, err := train.RunSteps(out, "qat", st, n, c.Batch, dev, func(s *autograd.Scope, _ int) *autograd.Tensor {
		x, y := next(loader)
		return autograd.CrossEntropy(p.Forward(s.FromFloat32s(dev, shape, x)), s.FromInt64s(dev, []int{len(y)}, y), autograd.CEOptions{})
	}); err != nil {
		return nil, 0, err
	}
	qm, err := p.Convert()
	return qm, n, err
}
