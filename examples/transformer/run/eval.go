package run

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/data"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/quant"
	"github.com/headroom-ml/headroom/train"
)

// evaluation returns the Program's Evaluate: the validation loss and a
// sample, of the INT8 model with --quantize.
func evaluation(c *Config, out io.Writer, corpus, val *data.Text) func(*train.Run[*replica]) (train.Eval, error) {
	return func(r *train.Run[*replica]) (train.Eval, error) {
		ev := train.Eval{Extra: map[string]any{"corpus_bytes": corpus.Len()}}
		var model nn.Layer = r.R.layer()
		if r.R.lora != nil {
			ev.Extra["lora"] = loraRecord(r.R.lora)
		}
		if c.Quantize != "" {
			q, rec, err := quantize(c, out, r, val)
			if err != nil {
				return ev, err
			}
			defer nn.Release(q)
			model, ev.Extra["quantize"] = q, rec
		}
		loss, sample, err := evaluate(c, r.Dev, model, val)
		if err != nil {
			return ev, err
		}
		if c.Quantize != "" {
			r.Trained = r.Dev.Stats() // the INT8 model's peaks
		}
		ev.Value, ev.Extra["sample"] = loss, sample
		ev.Line = fmt.Sprintf("validation loss %.4f nats/byte (%d batches)", loss, c.EvalBatches)
		if sample != "" {
			ev.After = "sample:\n" + sample + "\n"
		}
		return ev, nil
	}
}

// quantize evaluates the float model, converts it to INT8 (dynamic
// activations), releases the float model and its optimizer and resets the
// device's peaks: what is evaluated next is the INT8 model alone.
func quantize(c *Config, out io.Writer, r *train.Run[*replica], val *data.Text) (*quant.GPT, map[string]any, error) {
	model := r.R.model
	valFloat, _, err := evaluate(c, r.Dev, model, val)
	if err != nil {
		return nil, nil, err
	}
	q, err := quant.ConvertGPT(model, quant.Config{}, nil)
	if err != nil {
		return nil, nil, err
	}
	r.Opt.Release()
	nn.Release(model)
	r.Dev.ResetPeak()
	rec := map[string]any{"mode": "dynamic", "validation_loss_float": valFloat,
		"parameter_bytes_float": nn.ParamBytes(model), "parameter_bytes_int8": nn.ParamBytes(q)}
	fmt.Fprintf(out, "int8: parameters %s → %s; validation loss in float %.4f\n",
		device.FormatBytes(nn.ParamBytes(model)), device.FormatBytes(nn.ParamBytes(q)), valFloat)
	return q, rec, nil
}

// evaluate returns the mean validation loss over EvalBatches batches drawn
// with a fixed seed, and a sample generated from the prompt, in eval mode
// without recording a graph.
func evaluate(c *Config, dev *device.Device, m nn.Layer, val *data.Text) (float64, string, error) {
	m.Train(false)
	defer m.Train(true)
	rng := rand.New(rand.NewPCG(c.Seed+1, 11))
	var total float64
	var sample strings.Builder
	s := autograd.NewScope()
	err := s.Run(func() error {
		s.NoGrad(func() {
			for range c.EvalBatches {
				x, y := val.Batch(rng, c.Batch, c.Context)
				total += lossOf(s, dev, m, x, y, []int{c.Batch, c.Context}).Item()
				s.Release()
			}
			ctx := []byte(c.Prompt)
			sample.WriteString(c.Prompt)
			for range c.Sample {
				win := ctx[max(0, len(ctx)-c.Context):]
				idx := make([]int64, len(win))
				for i, b := range win {
					idx[i] = int64(b)
				}
				logits := m.Forward(s.FromInt64s(dev, []int{1, len(idx)}, idx))
				last := logits.Slice(1, len(idx)-1, len(idx)).Float64s()
				s.Release()
				b := pick(rng, last, 0.8)
				ctx = append(ctx, b)
				sample.WriteByte(b)
			}
		})
		return nil
	})
	return total / float64(max(c.EvalBatches, 1)), sample.String(), err
}

// pick samples a byte from logits at the given temperature.
func pick(rng *rand.Rand, logits []float64, temp float64) byte {
	top := math.Inf(-1)
	for _, v := range logits {
		top = max(top, v)
	}
	p := make([]float64, len(logits))
	var sum float64
	for i, v := range logits {
		p[i] = math.Exp((v - top) / temp)
		sum += p[i]
	}
	u := rng.Float64() * sum
	for i, v := range p {
		if u -= v; u <= 0 {
			return byte(i)
		}
	}
	return byte(len(p) - 1)
}
