package quant

import (
	"errors"
	"fmt"
	"iter"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// Model is a model prepared for quantization or converted to int8: *ResNet
// and *GPT.
type Model interface {
	nn.Layer
	// Calibrate runs a prepared model on the batches without recording a
	// graph, so that its observers record input ranges.
	Calibrate(batches iter.Seq[*autograd.Tensor]) error
	// Converted reports whether the model holds int8 layers.
	Converted() bool
}

// Convert converts m to int8 in one call and returns the converted model
// (*ResNet or *GPT):
//
//   - an *nn.ResNet or *nn.GPT (trained, float): post-training
//     quantization. With static activations it is prepared, calibrated on
//     batches (inputs as its Forward takes them; at least one is needed)
//     and converted; with dynamic activations batches are not used (nil
//     is fine). Batch-norms are folded with their running statistics.
//   - a model from PrepareResNet/PrepareGPT (calibrated) or
//     PrepareQATResNet/PrepareQATGPT (fine-tuned): it is calibrated on
//     batches when they are given, then converted; cfg is not used (the
//     prepared model's own applies).
//
// m is left as it was; the result owns its tensors. A failure (a model
// kind it does not know, uncalibrated static layers, memory) returns an
// error and leaves nothing allocated.
func Convert(m nn.Module, cfg Config, batches iter.Seq[*autograd.Tensor]) (Model, error) {
	var q Model
	var err error
	switch v := m.(type) {
	case *nn.ResNet:
		q, err = model(ConvertResNet(v, cfg, batches))
	case *nn.GPT:
		q, err = model(ConvertGPT(v, cfg, batches))
	case *ResNet:
		if batches != nil {
			if err := v.Calibrate(batches); err != nil {
				return nil, err
			}
		}
		q, err = model(v.Convert())
	case *GPT:
		if batches != nil {
			if err := v.Calibrate(batches); err != nil {
				return nil, err
			}
		}
		q, err = model(v.Convert())
	default:
		return nil, fmt.Errorf("quant: convert: model %T: want *nn.ResNet, *nn.GPT or a prepared *quant.ResNet or *quant.GPT", m)
	}
	return q, err
}

// model returns m as a Model, nil (not a nil pointer in an interface) on
// an error.
func model[M Model](m M, err error) (Model, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}

// ConvertResNet quantizes a trained ResNet after training (see Convert):
// PrepareResNet, Calibrate on batches when cfg.Activations is Static, then
// Convert.
func ConvertResNet(r *nn.ResNet, cfg Config, batches iter.Seq[*autograd.Tensor]) (*ResNet, error) {
	p, err := PrepareResNet(r, cfg)
	if err != nil {
		return nil, err
	}
	if p.cfg.Activations == Static && batches != nil {
		if err := p.Calibrate(batches); err != nil {
			return nil, err
		}
	}
	return p.Convert()
}

// ConvertGPT quantizes a trained GPT after training (see Convert):
// PrepareGPT, Calibrate on batches (token indices (B, T) in a Scope) when
// cfg.Activations is Static, then Convert.
func ConvertGPT(g *nn.GPT, cfg Config, batches iter.Seq[*autograd.Tensor]) (*GPT, error) {
	p, err := PrepareGPT(g, cfg)
	if err != nil {
		return nil, err
	}
	if p.cfg.Activations == Static && batches != nil {
		if err := p.Calibrate(batches); err != nil {
			return nil, err
		}
	}
	return p.Convert()
}

// NewLike returns an int8 model with the architecture of the float model
// m (*nn.ResNet or *nn.GPT), its weights and scales zero and its other
// tensors copied from m, on m's device: the model to Load a saved
// quantized model into. m's values are not used otherwise.
func NewLike(m nn.Module, cfg Config) (Model, error) {
	var p interface{ convertEmpty() (Model, error) }
	var err error
	switch v := m.(type) {
	case *nn.ResNet:
		p, err = prepareResNet(v, cfg, false)
	case *nn.GPT:
		p, err = prepareGPT(v, cfg, false)
	default:
		return nil, fmt.Errorf("quant: new like: model %T: want *nn.ResNet or *nn.GPT", m)
	}
	if err != nil {
		return nil, err
	}
	q, err := p.convertEmpty()
	if err != nil {
		return nil, fmt.Errorf("quant: new like: %w", err)
	}
	return q, nil
}

func (r *ResNet) convertEmpty() (Model, error) { return model(r.convert(true)) }
func (g *GPT) convertEmpty() (Model, error)    { return model(g.convert(true)) }

// convertLayer converts one prepared layer.
func convertLayer(l nn.Layer, cfg Config, empty bool) nn.Layer {
	switch v := l.(type) {
	case *floatConv:
		return v.convert(cfg, empty)
	case *floatLinear:
		return v.convert(cfg, empty)
	}
	fail("quant.convert", "layer %T is not a prepared layer", l)
	return nil
}

// checkObserved returns an error naming the layers whose observers have
// seen nothing, when static activations need their ranges.
func checkObserved(cfg Config, ls []nn.Layer, empty bool) error {
	if cfg.Activations != Static || empty {
		return nil
	}
	var missing []string
	for _, l := range ls {
		var q *quantizer
		var name string
		switch v := l.(type) {
		case *floatConv:
			q, name = v.q, v.c.Name
		case *floatLinear:
			q, name = v.q, v.l.Name
		default:
			continue
		}
		if q.obs.Batches == 0 {
			missing = append(missing, name)
		}
	}
	switch {
	case len(missing) == 0:
		return nil
	case len(missing) > 3:
		missing = append(missing[:3], fmt.Sprintf("and %d more", len(missing)-3))
	}
	return fmt.Errorf("static activations need calibration: the inputs of %v were never observed (Calibrate on at least one batch, or use Dynamic)", missing)
}

// calibrate runs m on each batch without recording a graph, its
// quantizers qs observing their inputs (also in QAT, whatever the mode),
// and releases what it makes.
func calibrate(m nn.Layer, qs []*quantizer, batches iter.Seq[*autograd.Tensor]) error {
	if batches == nil {
		return errors.New("quant: calibrate: nil batches")
	}
	for _, q := range qs {
		q.calibrating = true
	}
	defer func() {
		for _, q := range qs {
			q.calibrating = false
		}
	}()
	i := 0
	for x := range batches {
		err := autograd.Try(func() {
			if x == nil || x.Released() {
				fail("quant.calibrate", "batch %d is nil or released", i)
			}
			run := func() { m.Forward(x).Release() }
			if s := x.Scope(); s != nil {
				s.NoGrad(run)
			} else {
				run()
			}
		})
		if err != nil {
			return fmt.Errorf("quant: calibrate: batch %d: %w", i, err)
		}
		i++
	}
	return nil
}

// quantizers returns the quantizers of the prepared layers among ls.
func quantizers(ls []nn.Layer) []*quantizer {
	var qs []*quantizer
	for _, l := range ls {
		switch v := l.(type) {
		case *floatConv:
			qs = append(qs, v.q)
		case *floatLinear:
			qs = append(qs, v.q)
		}
	}
	return qs
}
