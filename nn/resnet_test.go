package nn_test

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

func TestBasicBlockGrad(t *testing.T) {
	for _, tc := range []struct {
		name              string
		in, width, stride int
	}{{"identity", 3, 3, 1}, {"projection", 2, 3, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			dev, b := f64(1)
			k := nn.NewBasicBlock(b, "k", tc.in, tc.width, tc.stride)
			defer nn.Release(k)
			if got := k.Downsample != nil; got != (tc.name == "projection") {
				t.Errorf("projection: %v", got)
			}
			x := randInput(dev, 2, 2, tc.in, 4, 4)
			defer x.Release()
			gradcheck(t, k, x, layerOf(k))
		})
	}
}

func TestBottleneckGrad(t *testing.T) {
	for _, tc := range []struct {
		name              string
		in, width, stride int
	}{{"identity", 8, 2, 1}, {"projection", 4, 2, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			dev, b := f64(1)
			k := nn.NewBottleneck(b, "k", tc.in, tc.width, tc.stride)
			defer nn.Release(k)
			x := randInput(dev, 2, 2, tc.in, 4, 4)
			defer x.Release()
			gradcheck(t, k, x, layerOf(k))
		})
	}
}

type resnetFunc func(*nn.Builder, string, nn.ResNetConfig) (*nn.ResNet, error)

// TestResNetParams checks torchvision's parameter counts (1000 classes,
// ImageNet stem, biases only in fc), built on the meta device, and the
// output shapes at 224×224.
func TestResNetParams(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     resnetFunc
		count int64
	}{
		{"resnet18", nn.ResNet18, 11_689_512},
		{"resnet34", nn.ResNet34, 21_797_672},
		{"resnet50", nn.ResNet50, 25_557_032},
		{"resnet101", nn.ResNet101, 44_549_160},
		{"resnet152", nn.ResNet152, 60_192_808},
	} {
		dev := meta.New(0, device.Options{})
		m, err := tc.f(nn.NewBuilder(dev, dtype.F32, 1), "", nn.ResNetConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if got := nn.Count(m); got != tc.count {
			t.Errorf("%s: %d parameters, want %d", tc.name, got, tc.count)
		}
		buffers := nn.ParamBytes(m) - 4*nn.Count(m)
		if got := dev.Stats().ByTag[device.Parameter].Current; got != nn.ParamBytes(m) || buffers <= 0 {
			t.Errorf("%s: device holds %d parameter bytes, ParamBytes %d, buffers %d", tc.name, got, nn.ParamBytes(m), buffers)
		}
		s := autograd.NewScope()
		if got := m.Forward(s.Zeros(dev, dtype.F32, 2, 3, 224, 224)).Shape(); !equal(got, []int{2, 1000}) {
			t.Errorf("%s: output %v at 224×224, want [2 1000]", tc.name, got)
		}
		s.Release()
		nn.Release(m)
		if got := dev.CurrentBytes(); got != 0 {
			t.Errorf("%s: %d bytes remain", tc.name, got)
		}
	}
}

// TestResNetShapes runs every variant on 28×28 and 32×32 inputs with the
// small stem and SmallResNet on both, on the meta device.
func TestResNetShapes(t *testing.T) {
	dev := meta.New(0, device.Options{})
	b := nn.NewBuilder(dev, dtype.F32, 1)
	small := nn.ResNetConfig{Stem: "small", InChannels: 1, Classes: 10}
	for _, f := range []resnetFunc{nn.ResNet18, nn.ResNet34, nn.ResNet50, nn.ResNet101, nn.ResNet152, nn.SmallResNet} {
		for _, in := range []struct{ c, hw int }{{1, 28}, {3, 32}} {
			cfg := small
			cfg.InChannels = in.c
			m, err := f(b, "", cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := autograd.NewScope()
			if got := m.Forward(s.Zeros(dev, dtype.F32, 4, in.c, in.hw, in.hw)).Shape(); !equal(got, []int{4, 10}) {
				t.Errorf("%v %d×%d: output %v, want [4 10]", m.Config.Blocks, in.hw, in.hw, got)
			}
			s.Release()
			nn.Release(m)
		}
	}
	m, err := nn.SmallResNet(b, "", nn.ResNetConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(m)
	if c := m.Config; c.Block != "basic" || !equal(c.Blocks, []int{1, 1, 1}) || !equal(c.Widths, []int{16, 32, 64}) || c.Stem != "small" || c.Classes != 10 || c.InChannels != 3 {
		t.Errorf("SmallResNet defaults: %+v", c)
	}
	if got := nn.Count(m); got != 78_042 {
		t.Errorf("SmallResNet (3 channels): %d parameters, want 78,042", got)
	}
}

func TestResNetNames(t *testing.T) {
	dev := meta.New(0, device.Options{})
	m, err := nn.ResNet50(nn.NewBuilder(dev, dtype.F32, 1), "", nn.ResNetConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(m)
	ps := m.Params()
	want := map[int]string{0: "conv1.weight", 1: "bn1.weight", 3: "bn1.running_mean", 5: "layer1.0.conv1.weight", len(ps) - 1: "fc.bias"}
	for i, n := range want {
		if ps[i].Name != n {
			t.Errorf("param %d is %s, want %s", i, ps[i].Name, n)
		}
	}
	found := false
	for _, p := range ps {
		found = found || p.Name == "layer4.0.downsample.1.running_var"
	}
	if !found {
		t.Error("no layer4.0.downsample.1.running_var")
	}
}

func TestNewResNetErrors(t *testing.T) {
	dev := meta.New(0, device.Options{})
	b := nn.NewBuilder(dev, dtype.F32, 1)
	for _, c := range []nn.ResNetConfig{
		{Blocks: nil},
		{Blocks: []int{2, 0}},
		{Blocks: []int{1, 1}, Widths: []int{8}},
		{Blocks: []int{1}, Block: "wide"},
		{Blocks: []int{1}, Stem: "cifar"},
	} {
		if _, err := nn.NewResNet(b, "r", c); err == nil {
			t.Errorf("NewResNet(%+v): no error", c)
		} else {
			t.Logf("%v", err)
		}
	}
	small := meta.New(1, device.Options{Capacity: 64 << 20})
	_, err := nn.ResNet50(nn.NewBuilder(small, dtype.F32, 1), "", nn.ResNetConfig{})
	if !autograd.IsOOM(err) {
		t.Fatalf("ResNet-50 in 64 MiB: error %v, want an OOM", err)
	}
	if got := small.CurrentBytes(); got != 0 {
		t.Errorf("failed build left %d bytes: %v", got, small.Live())
	}
}

// TestResNetDeterminism builds SmallResNet twice from one seed and checks
// identical parameters, then that eval mode uses the running statistics:
// eval forwards repeat exactly and leave the buffers as they were, while a
// training forward moves them.
func TestResNetDeterminism(t *testing.T) {
	build := func(seed uint64) *nn.ResNet {
		_, b := f64(seed)
		m, err := nn.SmallResNet(b, "", nn.ResNetConfig{InChannels: 1})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m1, m2 := build(3), build(3)
	defer nn.Release(m1)
	defer nn.Release(m2)
	v1, v2 := values(m1), values(m2)
	for i := range v1 {
		if !equalF(v1[i], v2[i]) {
			t.Errorf("same seed: %s differs", m1.Params()[i].Name)
		}
	}
	dev := m1.Conv1.Weight.Device()
	forward := func() []float64 {
		s := autograd.NewScope()
		defer s.Release()
		x := s.FromFloat64s(dev, []int{2, 1, 28, 28}, ramp(2*784))
		return m1.Forward(x).Float64s()
	}
	m1.Train(false)
	before := values(m1)
	a, b := forward(), forward()
	if !equalF(a, b) {
		t.Error("eval forwards differ")
	}
	after := values(m1)
	for i := range before {
		if !equalF(before[i], after[i]) {
			t.Errorf("eval forward changed %s", m1.Params()[i].Name)
		}
	}
	m1.Train(true)
	forward()
	if equalF(m1.BN1.RunningMean.Float64s(), before[3]) { // conv1.weight, bn1.weight, bn1.bias, bn1.running_mean
		t.Error("training forward left bn1.running_mean unchanged")
	}
}
