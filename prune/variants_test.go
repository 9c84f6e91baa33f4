package prune_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/prune"
)

type resnetFunc func(*nn.Builder, string, nn.ResNetConfig) (*nn.ResNet, error)

var variants = []struct {
	name   string
	f      resnetFunc
	block  string
	blocks []int
	count  int64   // torchvision's parameters
	gmacs  float64 // torchvision's published GFLOPS (multiply-adds) at 224×224
}{
	{"resnet18", nn.ResNet18, "basic", []int{2, 2, 2, 2}, 11_689_512, 1.81},
	{"resnet34", nn.ResNet34, "basic", []int{3, 4, 6, 3}, 21_797_672, 3.66},
	{"resnet50", nn.ResNet50, "bottleneck", []int{3, 4, 6, 3}, 25_557_032, 4.09},
	{"resnet101", nn.ResNet101, "bottleneck", []int{3, 4, 23, 3}, 44_549_160, 7.80},
	{"resnet152", nn.ResNet152, "bottleneck", []int{3, 8, 36, 3}, 60_192_808, 11.51},
}

// torchvisionCount is the trainable parameter count and BatchNorm buffer
// elements of a torchvision ResNet (1000 classes, 3 input channels) whose
// blocks keep KeepCount(w, f) of each inner width w, summed block by block
// from nn's layer formulas.
func torchvisionCount(block string, blocks []int, f float64) (params, buffers int64) {
	p := 3*64*49 + 2*64 // stem conv and bn1
	bufs := 2 * 64
	in := 64
	for i, n := range blocks {
		w := 64 << i
		for j := range n {
			k := prune.KeepCount(w, f)
			out := w
			if block == "bottleneck" {
				out = 4 * w
				p += in*k + 2*k + 9*k*k + 2*k + k*out + 2*out
				bufs += 2 * (k + k + out)
			} else {
				p += 9*in*k + 2*k + 9*k*out + 2*out
				bufs += 2 * (k + out)
			}
			if (i > 0 && j == 0) || in != out { // projection shortcut
				p += in*out + 2*out
				bufs += 2 * out
			}
			in = out
		}
	}
	p += in*1000 + 1000
	return int64(p), int64(bufs)
}

// TestResNetVariants prunes every torchvision ResNet on the meta device
// at 30% and 50%: parameter counts and bytes match the closed form (and
// the allocator), the unpruned FLOPs match torchvision's published
// numbers, and forward and backward run on the pruned shapes.
func TestResNetVariants(t *testing.T) {
	for _, v := range variants {
		if p, _ := torchvisionCount(v.block, v.blocks, 0); p != v.count {
			t.Fatalf("%s: closed form gives %d parameters unpruned, want torchvision's %d", v.name, p, v.count)
		}
		for _, f := range []float64{0.3, 0.5} {
			dev := meta.New(0, device.Options{})
			r, err := v.f(nn.NewBuilder(dev, dtype.F32, 1), "", nn.ResNetConfig{})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := prune.ResNet(r, f, prune.Options{})
			if err != nil {
				t.Fatal(err)
			}
			params, bufs := torchvisionCount(v.block, v.blocks, f)
			if rep.ParamsBefore != v.count || rep.ParamsAfter != params || rep.BytesAfter != 4*(params+bufs) {
				t.Errorf("%s at %g: parameters %d → %d, bytes after %d; want %d → %d, %d bytes", v.name, f, rep.ParamsBefore, rep.ParamsAfter, rep.BytesAfter, v.count, params, 4*(params+bufs))
			}
			if got := paramBytes(dev); got != rep.BytesAfter {
				t.Errorf("%s at %g: allocator holds %d parameter bytes, report %d", v.name, f, got, rep.BytesAfter)
			}
			if got := math.Round(float64(rep.FLOPsBefore)/2/1e7) / 100; got != v.gmacs {
				t.Errorf("%s: %d FLOPs = %.2f G multiply-adds, want torchvision's %.2f", v.name, rep.FLOPsBefore, got, v.gmacs)
			}
			s := autograd.NewScope()
			err = autograd.Try(func() {
				logits := r.Forward(s.Zeros(dev, dtype.F32, 2, 3, 224, 224))
				if !slices.Equal(logits.Shape(), []int{2, 1000}) {
					t.Errorf("%s at %g: logits %v", v.name, f, logits.Shape())
				}
				if err := autograd.CrossEntropy(logits, s.Zeros(dev, dtype.I64, 2), autograd.CEOptions{}).Backward(); err != nil {
					panic(err)
				}
			})
			if err != nil {
				t.Errorf("%s at %g: %v", v.name, f, err)
			}
			s.Release()
			for _, p := range nn.Trainable(r) {
				if g := p.T.Grad(); g == nil || !slices.Equal(g.Shape(), p.T.Shape()) {
					t.Errorf("%s at %g: %s %v has gradient %v", v.name, f, p.Name, p.T.Shape(), g)
					break
				}
			}
			t.Logf("%s at %g: parameters %.1f%%, bytes %d → %d, GFLOPs %.2f → %.2f", v.name, f,
				100*float64(rep.ParamsAfter)/float64(rep.ParamsBefore), rep.BytesBefore, rep.BytesAfter, float64(rep.FLOPsBefore)/1e9, float64(rep.FLOPsAfter)/1e9)
			nn.Release(r)
		}
	}
}

// TestResNetOutOfMemoryChangesNothing prunes on a device whose capacity
// leaves no room for the new tensors: the error is an out-of-memory one,
// the model keeps its tensors and the device its bytes.
func TestResNetOutOfMemoryChangesNothing(t *testing.T) {
	dev := meta.New(0, device.Options{})
	r, err := nn.ResNet18(nn.NewBuilder(dev, dtype.F32, 1), "", nn.ResNetConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(r)
	dev.SetCapacity(dev.Stats().Reserved.Current)
	before, held := paramTensors(r), dev.Stats().Requested.Current
	_, err = prune.ResNet(r, 0.3, prune.Options{})
	var oom *device.OOMError
	if !errors.As(err, &oom) {
		t.Fatalf("error %v, want an out-of-memory error", err)
	}
	t.Logf("error: %.200s…", err)
	after := paramTensors(r)
	for name, p := range before {
		if after[name] != p || p.Released() {
			t.Errorf("%s was replaced or released", name)
		}
	}
	if got := dev.Stats().Requested.Current; got != held {
		t.Errorf("device holds %d bytes after the failure, want %d", got, held)
	}
	if k := r.Stages[0][0].(*nn.BasicBlock); k.Conv1.Out != 64 || k.BN1.C != 64 || k.Conv2.In != 64 {
		t.Errorf("sizes changed: %d, %d, %d", k.Conv1.Out, k.BN1.C, k.Conv2.In)
	}
}

// TestFLOPsErrors checks FLOPs' input checks.
func TestFLOPsErrors(t *testing.T) {
	dev := meta.New(0, device.Options{})
	r, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, 1), "", nn.ResNetConfig{InChannels: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(r)
	for _, hw := range [][2]int{{0, 28}, {28, -1}} {
		if _, err := prune.FLOPs(r, hw[0], hw[1]); err == nil {
			t.Errorf("FLOPs(%d, %d): no error", hw[0], hw[1])
		} else {
			t.Logf("FLOPs(%d, %d): %v", hw[0], hw[1], err)
		}
	}
	// 1×1 images pass through the small ResNet (3×3 convolutions padded by
	// 1); the ImageNet stem's 7×7 stride-2 conv needs none bigger either.
	if f, err := prune.FLOPs(r, 1, 1); err != nil || f <= 0 {
		t.Errorf("FLOPs(1, 1) = %d, %v", f, err)
	}
	if _, err := prune.FLOPs(nil, 28, 28); err == nil {
		t.Error("FLOPs(nil): no error")
	}
}
