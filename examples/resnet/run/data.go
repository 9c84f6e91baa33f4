package run

import (
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/data"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// dataset describes the images' normalisation and augmentation.
type dataset struct {
	name      string
	mean, std []float32
	crop      int
	flip      bool
}

func loadData(c *Config) (trainSet, testSet *data.Images, ds dataset, err error) {
	switch c.Dataset {
	case "mnist":
		trainSet, testSet, err = data.LoadMNIST(c.Data)
		ds = dataset{name: "MNIST", mean: []float32{0.1307}, std: []float32{0.3081}}
	case "cifar10":
		trainSet, testSet, err = data.LoadCIFAR10(c.Data)
		ds = dataset{name: "CIFAR-10", mean: []float32{0.4914, 0.4822, 0.4465}, std: []float32{0.2470, 0.2435, 0.2616}, crop: 4, flip: true}
	default:
		trainSet = data.SyntheticImages(8192, 3, 32, 32, 10, c.Seed)
		testSet = data.SyntheticImages(1024, 3, 32, 32, 10, c.Seed)
		ds = dataset{name: "synthetic 3×32×32", mean: []float32{0.5, 0.5, 0.5}, std: []float32{0.25, 0.25, 0.25}}
	}
	return trainSet, testSet, ds, err
}

// buildModel makes the ResNet the flags name for images like set's with b.
func buildModel(c *Config, b *nn.Builder, set *data.Images) (*nn.ResNet, error) {
	stem := c.Stem
	if stem == "auto" {
		stem = "small"
		if set.H > 64 {
			stem = "imagenet"
		}
	}
	cfg := nn.ResNetConfig{Stem: stem, InChannels: set.C, Classes: set.Classes}
	switch c.Model {
	case "resnet18":
		return nn.ResNet18(b, "resnet", cfg)
	case "resnet34":
		return nn.ResNet34(b, "resnet", cfg)
	case "resnet50":
		return nn.ResNet50(b, "resnet", cfg)
	case "resnet101":
		return nn.ResNet101(b, "resnet", cfg)
	case "resnet152":
		return nn.ResNet152(b, "resnet", cfg)
	}
	return nn.SmallResNet(b, "resnet", cfg)
}

func evalCount(c *Config, set *data.Images) int {
	if c.EvalSamples > 0 && c.EvalSamples < set.N {
		return c.EvalSamples
	}
	return set.N
}

// evaluate returns the accuracy on the test set (or its first
// EvalSamples images), in eval mode without recording a graph.
func evaluate(c *Config, dev *device.Device, m nn.Layer, set *data.Images, ds dataset, pdt dtype.DType) (float64, error) {
	n := evalCount(c, set)
	sub := *set
	sub.N, sub.Pixels, sub.Labels = n, set.Pixels[:n*set.C*set.H*set.W], set.Labels[:n]
	l, err := data.NewLoader(&sub, data.LoaderConfig{Batch: c.Batch, Mean: ds.mean, Std: ds.std})
	if err != nil {
		return 0, err
	}
	m.Train(false)
	defer m.Train(true)
	correct := 0
	s := autograd.NewScope()
	err = s.Run(func() error {
		s.NoGrad(func() {
			for {
				x, y, ok := l.Next()
				if !ok {
					return
				}
				xs := s.FromFloat32s(dev, []int{len(y), set.C, set.H, set.W}, x)
				if pdt != dtype.F32 {
					xs = xs.Cast(pdt)
				}
				pred := m.Forward(xs).ArgMax(1, false).Int64s()
				for i := range pred {
					if pred[i] == y[i] {
						correct++
					}
				}
				s.Release()
			}
		})
		return nil
	})
	return float64(correct) / float64(n), err
}
