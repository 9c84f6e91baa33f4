package run

import (
	"math"
	"math/rand/v2"
	"strings"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/data"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/nn"
)

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
	defer s.Release()
	err := autograd.Try(func() {
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
