package main

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

func main() {
	steps := flag.Int("steps", 300, "training steps")
	batchSize := flag.Int("batch", 64, "batch size")
	lr := flag.Float64("lr", 0.1, "learning rate")
	seed := flag.Uint64("seed", 1, "random seed")
	limit := flag.String("mem-limit", "", "device capacity, e.g. 64MiB (default: unlimited)")
	flag.Parse()
	if err := run(*steps, *batchSize, *lr, *seed, *limit); err != nil {
		var oom *device.OOMError
		if errors.As(err, &oom) {
			fmt.Fprintln(os.Stderr, "mlp:", oom)
		} else {
			fmt.Fprintln(os.Stderr, "mlp:", err)
		}
		os.Exit(1)
	}
}

const features, hidden, classes = 32, 128, 8

func run(steps, bs int, lr float64, seed uint64, limit string) error {
	var capacity int64
	if limit != "" {
		var err error
		if capacity, err = device.ParseBytes(limit); err != nil {
			return err
		}
	}
	dev := cpu.New(0, device.Options{Capacity: capacity})
	var model *nn.Sequential
	if err := autograd.Try(func() {
		b := nn.NewBuilder(dev, dtype.F32, seed)
		model = nn.NewSequential(
			nn.NewLinear(b, "fc1", features, hidden, true),
			nn.ReLU("relu"),
			nn.NewLinear(b, "fc2", hidden, classes, true),
		)
	}); err != nil {
		return err
	}
	defer nn.Release(model)
	fmt.Printf("model: %d parameters, %s on %s\n", nn.Count(model), device.FormatBytes(nn.ParamBytes(model)), dev)

	rng := rand.New(rand.NewPCG(seed, 2))
	s := autograd.NewScope()
	for i := range steps {
		x, y := sample(rng, bs)
		var loss float64
		err := autograd.Try(func() {
			s.SetPhase("forward")
			xs := s.FromFloat32s(dev, []int{bs, features}, x)
			ys := s.FromInt64s(dev, []int{bs}, y)
			l := autograd.CrossEntropy(model.Forward(xs), ys, autograd.CEOptions{})
			if err := l.Backward(); err != nil {
				panic(err)
			}
			loss = l.Item()
		})
		s.Release()
		if err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
		for _, p := range nn.Trainable(model) {
			p.T.AddInPlace(p.T.Grad(), -lr)
			p.T.ZeroGrad()
		}
		if i%50 == 0 || i == steps-1 {
			fmt.Printf("step %4d  loss %.4f  live %s  peak %s\n", i, loss, device.FormatBytes(dev.CurrentBytes()), device.FormatBytes(dev.PeakBytes()))
		}
	}
	acc := evaluate(dev, model, rand.New(rand.NewPCG(seed+1, 3)))
	fmt.Printf("held-out accuracy: %.1f%%\n", 100*acc)
	fmt.Print(dev.Summary())
	if leaks := dev.Leaks(device.Parameter); len(leaks) > 0 {
		return fmt.Errorf("memory still held after training: %v", leaks)
	}
	return nil
}

// sample returns a batch whose label is the index of the largest of the
// first `classes` features.
func sample(rng *rand.Rand, bs int) ([]float32, []int64) {
	x := make([]float32, bs*features)
	y := make([]int64, bs)
	for i := range bs {
		best := 0
		for j := range features {
			x[i*features+j] = float32(rng.NormFloat64())
			if j < classes && x[i*features+j] > x[i*features+best] {
				best = j
			}
		}
		y[i] = int64(best)
	}
	return x, y
}

func evaluate(dev *device.Device, model *nn.Sequential, rng *rand.Rand) float64 {
	const n = 1024
	x, y := sample(rng, n)
	s := autograd.NewScope()
	defer s.Release()
	correct := 0
	s.NoGrad(func() {
		pred := model.Forward(s.FromFloat32s(dev, []int{n, features}, x)).ArgMax(1, false).Int64s()
		for i := range pred {
			if pred[i] == y[i] {
				correct++
			}
		}
	})
	return float64(correct) / n
}
