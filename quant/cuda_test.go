package quant_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/quant"
)

// The quantized paths on the cuda device (the host emulator; a real GPU
// with HEADROOM_CUDA_REAL=1) against the cpu's, from the same float model.

func TestMain(m *testing.M) { cudatest.Main(m, 0, 1) }

// twoResNets returns the cpu device, an emulated cuda device, and one
// trained SmallResNet (one input channel, from seed) on each, released at
// the end of the test.
func twoResNets(t *testing.T, seed uint64) (cdev, gdev *device.Device, rc, rg *nn.ResNet) {
	cdev = cpu.New(0, device.Options{})
	gdev = cudatest.Open(t, 0, device.Options{})
	rc = trainedResNet(t, cdev, nn.ResNetConfig{InChannels: 1}, seed)
	t.Cleanup(func() { nn.Release(rc) })
	rg = resnetOn(t, gdev, rc)
	t.Cleanup(func() { nn.Release(rg) })
	return cdev, gdev, rc, rg
}

// resnetOn returns a SmallResNet on dev holding every parameter and
// buffer of src (its batch-norm statistics included), in eval mode.
func resnetOn(t *testing.T, dev *device.Device, src *nn.ResNet) *nn.ResNet {
	t.Helper()
	r, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, 99), "resnet", src.Config)
	if err != nil {
		t.Fatal(err)
	}
	from, err := nn.StateTensors(src, "")
	if err != nil {
		t.Fatal(err)
	}
	to, err := nn.StateTensors(r, "")
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range from {
		to[name].SetFloat32s(w.Float32s())
	}
	r.Train(false)
	return r
}

// TestConvertResNetCUDA converts one trained SmallResNet on cpu and on
// cuda, with dynamic activations (int8 logits bit for bit the cpu's: the
// whole int8 path is exact) and static ones calibrated on the same images
// (the calibration runs the float convolutions, whose cuBLAS roundings
// may move an activation scale by an ulp: within a step of the int8
// grid), and checks the QAT model's eval forward (FakeQuantize) against
// its converted int8 model on cuda, as the cpu test does.
func TestConvertResNetCUDA(t *testing.T) {
	cdev, gdev, rc, rg := twoResNets(t, 1)
	rng := rand.New(rand.NewPCG(2, 2))
	shape := []int{3, 1, 12, 12}
	x := randF32(rng, 3*144, 1)
	for _, act := range []quant.Activations{quant.Dynamic, quant.Static} {
		var logits [2][]float32
		for i, d := range []struct {
			dev *device.Device
			r   *nn.ResNet
		}{{cdev, rc}, {gdev, rg}} {
			q, err := quant.ConvertResNet(d.r, quant.Config{Activations: act}, images(d.dev, 5, 2, 4, 1, 12, 12))
			if err != nil {
				t.Fatalf("%v on %s: %v", act, d.dev, err)
			}
			logits[i] = forward(d.dev, q, shape, x)
			nn.Release(q)
		}
		e := relErr(logits[1], logits[0])
		t.Logf("%v activations: cuda's int8 logits against the cpu's: relative error %.3g", act, e)
		if tol := map[quant.Activations]float64{quant.Dynamic: 0, quant.Static: 0.02}[act]; e > tol {
			t.Errorf("%v: cuda's int8 logits differ from the cpu's by %g of the largest, want ≤ %g", act, e, tol)
		}
	}
	p, err := quant.PrepareQATResNet(rg, quant.Config{Activations: quant.Dynamic})
	if err != nil {
		t.Fatal(err)
	}
	p.Train(false)
	fq := forward(gdev, p, shape, x)
	q, err := p.Convert()
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(q)
	if e := relErr(forward(gdev, q, shape, x), fq); e > 1e-5 {
		t.Errorf("cuda: the int8 model differs from the QAT model by %g of the largest logit", e)
	}
}

// TestQATStepCUDA takes one QAT backward pass (FakeQuantize's
// straight-through gradient, per channel for the weights and per tensor
// for the activations) on both devices from the same model and batch and
// compares the gradients of the float parameters.
func TestQATStepCUDA(t *testing.T) {
	cdev, gdev, rc, rg := twoResNets(t, 4)
	rng := rand.New(rand.NewPCG(6, 6))
	xv := randF32(rng, 4*144, 1)
	grads := func(dev *device.Device, r *nn.ResNet) map[string][]float32 {
		p, err := quant.PrepareQATResNet(r, quant.Config{Activations: quant.Dynamic})
		if err != nil {
			t.Fatal(err)
		}
		p.Train(true)
		s := autograd.NewScope()
		defer s.Release()
		y := s.FromInt64s(dev, []int{4}, []int64{0, 1, 2, 3})
		loss := autograd.CrossEntropy(p.Forward(s.FromFloat32s(dev, []int{4, 1, 12, 12}, xv)), y, autograd.CEOptions{})
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		g := map[string][]float32{}
		for _, q := range p.Params() {
			if q.T.Grad() != nil {
				g[q.Name] = q.T.Grad().Float32s()
			}
		}
		nn.ZeroGrad(p)
		return g
	}
	want, got := grads(cdev, rc), grads(gdev, rg)
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("%d gradients on cuda, %d on cpu", len(got), len(want))
	}
	worst := 0.0
	for name, w := range want {
		worst = max(worst, relErr(got[name], w))
	}
	t.Logf("QAT gradients: cuda against cpu, worst relative error %.3g over %d tensors", worst, len(want))
	if worst > 1e-3 {
		t.Errorf("QAT gradients on cuda differ from the cpu's by %g of a tensor's largest", worst)
	}
}
