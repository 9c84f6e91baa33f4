package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

func main() {
	steps := flag.Int("steps", 300, "optimizer steps, ≥ 1")
	batch := flag.Int("batch", 64, "batch size, ≥ 1")
	lr := flag.Float64("lr", 0.02, "learning rate, > 0")
	on := flag.String("device", "cpu", "device: cpu, cuda or cuda:N")
	flag.Parse()
	os.Exit(train.ExitCode(os.Stderr, "mlp", run(os.Stdout, *on, *steps, *batch, *lr)))
}

const features, hidden, classes = 32, 128, 8

func run(out io.Writer, on string, steps, batch int, lr float64) (err error) {
	if steps < 1 || batch < 1 || !(lr > 0) || math.IsInf(lr, 0) || flag.NArg() > 0 {
		return train.Usagef("--steps %d, --batch %d, --lr %g, arguments %q: want steps ≥ 1, batch ≥ 1, 0 < lr < ∞, no arguments", steps, batch, lr, flag.Args())
	}
	dev, err := train.OpenDevice(on, device.Options{Capacity: 64 << 20}) // a 64 MiB "device"
	if err != nil {
		return err // exit status 69 when no GPU can be opened
	}
	defer train.Close(dev, &err) // gives its memory back; reports leaks
	var model *nn.Sequential
	if err := autograd.Try(func() { // layer constructors panic only when memory runs out
		b := nn.NewBuilder(dev, dtype.F32, 1)
		model = nn.NewSequential(nn.NewLinear(b, "fc1", features, hidden, true), nn.ReLU("relu"), nn.NewLinear(b, "fc2", hidden, classes, true))
	}); err != nil {
		return err
	}
	defer nn.Release(model)
	opt, err := optim.NewSGD(model.Params(), optim.SGDConfig{LR: lr, Momentum: 0.9})
	if err != nil {
		return err
	}
	defer opt.Release()

	rng := rand.New(rand.NewPCG(1, 2))
	s := autograd.NewScope() // owns what a step makes; Run releases it
	for step := range steps {
		x, y := sample(rng, batch)
		var loss float64
		err := s.Run(func() error { // an OOM or a misuse comes back as an error
			logits := model.Forward(s.FromFloat32s(dev, []int{batch, features}, x))
			l := autograd.CrossEntropy(logits, s.FromInt64s(dev, []int{batch}, y), autograd.CEOptions{})
			loss = l.Item()
			return l.Backward()
		})
		if err == nil {
			err = opt.Step()
		}
		if err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
		opt.ZeroGrad()
		if step%100 == 0 || step == steps-1 {
			fmt.Fprintf(out, "step %3d  loss %.4f  peak %s\n", step, loss, device.FormatBytes(dev.PeakBytes()))
		}
	}
	x, y := sample(rng, 1024)
	correct := 0
	err = s.Run(func() error {
		s.NoGrad(func() {
			pred := model.Forward(s.FromFloat32s(dev, []int{1024, features}, x)).ArgMax(1, false).Int64s()
			for i := range pred {
				if pred[i] == y[i] {
					correct++
				}
			}
		})
		return nil
	})
	fmt.Fprintf(out, "held-out accuracy %.1f%%\n%s", 100*float64(correct)/1024, dev.Summary())
	return err
}

// sample returns a batch of n random inputs whose label is the index of
// the largest of their first `classes` features.
func sample(rng *rand.Rand, n int) ([]float32, []int64) {
	x, y := make([]float32, n*features), make([]int64, n)
	for i := range n {
		for j := range features {
			x[i*features+j] = float32(rng.NormFloat64())
			if j < classes && x[i*features+j] > x[i*features+int(y[i])] {
				y[i] = int64(j)
			}
		}
	}
	return x, y
}
