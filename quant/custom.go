package quant

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// Layers of hand-built models: a model that is neither an nn.ResNet nor an
// nn.GPT is quantized layer by layer — FromLinear and FromConv2d for
// post-training quantization with a known input scale (or dynamic), or
// PrepareLinear and PrepareConv2d (observing, or QAT) followed by
// ConvertLayer.

// PrepareLinear returns l prepared for quantization as a layer: with qat
// false it computes l and its observer records the inputs' range (static
// activations); with qat true its forward fake-quantizes l's weight per
// output feature and its input per tensor (QAT; observers record in
// training mode). It borrows l: its Params are l's.
func PrepareLinear(l *nn.Linear, cfg Config, qat bool) (nn.Layer, error) {
	cfg, err := cfg.resolved(qat)
	if err != nil {
		return nil, fmt.Errorf("quant.PrepareLinear %s: %w", l.Name, err)
	}
	return &floatLinear{l: l, q: newQuantizer(cfg, qat)}, nil
}

// PrepareConv2d returns the convolution c, followed by the batch-norm bn
// (nil for none) and a ReLU when relu is set, prepared for quantization as
// one layer (see PrepareLinear and PrepareQATResNet: observing, it computes
// the float layers exactly, batch-norm in eval mode; in QAT it folds bn
// with its statistics frozen and fake-quantizes). It borrows c and bn.
func PrepareConv2d(c *nn.Conv2d, bn *nn.BatchNorm2d, relu bool, cfg Config, qat bool) (nn.Layer, error) {
	cfg, err := cfg.resolved(qat)
	if err != nil {
		return nil, fmt.Errorf("quant.PrepareConv2d %s: %w", c.Name, err)
	}
	if bn != nil && bn.C != c.Out {
		return nil, fmt.Errorf("quant.PrepareConv2d %s: batch-norm %s has %d channels, the convolution %d outputs", c.Name, bn.Name, bn.C, c.Out)
	}
	return &floatConv{c: c, bn: bn, relu: relu, q: newQuantizer(cfg, qat)}, nil
}

// ConvertLayer returns the int8 layer (*Linear or *Conv2d) of a layer from
// PrepareLinear or PrepareConv2d, with the input scale its observer
// recorded when activations are static. The prepared layer is left as it
// was.
func ConvertLayer(l nn.Layer) (nn.Layer, error) {
	var cfg Config
	switch v := l.(type) {
	case *floatLinear:
		cfg.Activations = v.q.act
	case *floatConv:
		cfg.Activations = v.q.act
	default:
		return nil, fmt.Errorf("quant.ConvertLayer: layer %T is not from PrepareLinear or PrepareConv2d", l)
	}
	if err := checkObserved(cfg, []nn.Layer{l}, false); err != nil {
		return nil, fmt.Errorf("quant.ConvertLayer: %w", err)
	}
	var q nn.Layer
	err := autograd.Try(func() { q = convertLayer(l, cfg, false) })
	if err != nil {
		return nil, fmt.Errorf("quant.ConvertLayer: %w", err)
	}
	return q, nil
}

// FromLinear returns the int8 form of the float Linear l: its weight
// quantized per output feature, its bias copied, and a static input scale
// when inputScale > 0 (0 means dynamic). For hand-built models; l is left
// as it was.
func FromLinear(l *nn.Linear, inputScale float32) (*Linear, error) {
	cfg, err := scaleConfig("FromLinear", l.Name, inputScale)
	if err != nil {
		return nil, err
	}
	var q *Linear
	err = autograd.Try(func() {
		q = (&floatLinear{l: l, q: newQuantizer(cfg, false)}).convert(cfg, false)
		if q.InputScale != nil {
			q.InputScale.SetFloat32s([]float32{inputScale})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("quant.FromLinear %s: %w", l.Name, err)
	}
	return q, nil
}

// FromConv2d returns the int8 form of the float convolution c followed by
// the batch-norm bn (nil for none; folded with its running statistics) and
// a ReLU when relu is set (fused), with a static input scale when
// inputScale > 0 (0 means dynamic). c and bn are left as they were.
func FromConv2d(c *nn.Conv2d, bn *nn.BatchNorm2d, relu bool, inputScale float32) (*Conv2d, error) {
	cfg, err := scaleConfig("FromConv2d", c.Name, inputScale)
	if err != nil {
		return nil, err
	}
	if bn != nil && bn.C != c.Out {
		return nil, fmt.Errorf("quant.FromConv2d %s: batch-norm %s has %d channels, the convolution %d outputs", c.Name, bn.Name, bn.C, c.Out)
	}
	var q *Conv2d
	err = autograd.Try(func() {
		q = (&floatConv{c: c, bn: bn, relu: relu, q: newQuantizer(cfg, false)}).convert(cfg, false)
		if q.InputScale != nil {
			q.InputScale.SetFloat32s([]float32{inputScale})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("quant.FromConv2d %s: %w", c.Name, err)
	}
	return q, nil
}

// scaleConfig returns the Config of a layer converted with a given input
// scale.
func scaleConfig(fn, name string, inputScale float32) (Config, error) {
	switch {
	case !(inputScale >= 0) || inputScale > 0x1p127:
		return Config{}, fmt.Errorf("quant.%s %s: input scale %g: want 0 (dynamic) or a finite value > 0", fn, name, inputScale)
	case inputScale > 0:
		return Config{Activations: Static}, nil
	}
	return Config{}, nil
}
