package amp_test

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// readCounter is a host-memory backend whose kernels are the cpu device's
// with every device→host Read counted.
type readCounter struct {
	device.Kernels
	reads *int
}

func (c readCounter) Read(dst []byte, src device.Operand) {
	*c.reads++
	c.Kernels.Read(dst, src)
}

type countingBackend struct{ k readCounter }

func (countingBackend) Kind() string { return "cpu" }
func (countingBackend) Alloc(n int64) (device.Memory, error) {
	return device.Memory{Host: make([]byte, n)}, nil
}
func (countingBackend) Commit(device.Memory, int64, int64) error { return nil }
func (countingBackend) Decommit(device.Memory, int64, int64)     {}
func (countingBackend) Free(device.Memory)                       {}
func (b countingBackend) Kernels() device.Kernels                { return b.k }

func countingDevice(name string, reads *int) *device.Device {
	k := readCounter{Kernels: cpu.New(0, device.Options{}).Kernels(), reads: reads}
	return device.New(name, countingBackend{k}, device.Options{})
}

// TestUnscaleReadsEachDeviceOnce unscales seven F16 gradients on two
// devices — one infinite, one NaN after it, one a transposed view — and
// counts the device→host reads: one per device for the contiguous ones
// and one for the view, which is checked on its own. The gradients and the
// overflow named must be what the per-tensor check (ScaleInPlace then
// Tensor.SumSquares on each) gives.
func TestUnscaleReadsEachDeviceOnce(t *testing.T) {
	var r0, r1 int
	d0, d1 := countingDevice("count:0", &r0), countingDevice("count:1", &r1)
	ref := cpu.New(0, device.Options{})
	inf := math.Inf(1)
	type spec struct {
		dev  *device.Device
		name string
		g    []float64
	}
	specs := []spec{
		{d0, "w0", []float64{1024, -2048, 4096}},
		{d1, "w1", []float64{8, 16}},
		{d0, "w2", []float64{65504, 3}},
		{d1, "w3", []float64{1, inf, 2}},
		{d0, "w4", []float64{math.NaN(), 1}},
		{d1, "w5", []float64{0.5, 0.25, 7}},
	}
	var params []nn.Param
	var want [][]float64
	wantOverflow := ""
	record := func(name string, g []float64, ss float64) {
		want = append(want, g)
		if wantOverflow == "" && (math.IsInf(ss, 0) || math.IsNaN(ss)) {
			wantOverflow = name
		}
	}
	for _, s := range specs {
		p := autograd.Param(s.dev, dtype.F16, s.name, len(s.g))
		g := autograd.New(s.dev, dtype.F16, device.Gradient, len(s.g))
		g.SetFloat64s(s.g)
		p.SetGrad(g)
		params = append(params, nn.Param{Name: s.name, T: p})
		g16, ss := oldUnscale(ref, s.g, []int{len(s.g)}, false)
		record(s.name, g16, ss)
	}
	// A transposed (non-contiguous) gradient on d0.
	pt := autograd.Param(d0, dtype.F16, "wt", 2, 3)
	base := autograd.New(d0, dtype.F16, device.Gradient, 3, 2)
	tv := []float64{2, 4, 6, 8, 10, 12}
	base.SetFloat64s(tv)
	pt.SetGrad(base.T())
	params = append(params, nn.Param{Name: "wt", T: pt})
	g16, ss := oldUnscale(ref, tv, []int{3, 2}, true)
	record("wt", g16, ss)

	o, err := optim.NewSGD(params, optim.SGDConfig{LR: 0.1, MasterWeights: true})
	if err != nil {
		t.Fatal(err)
	}
	sc := amp.NewScaler(dtype.F16, amp.ScalerConfig{InitScale: 1024})
	r0, r1 = 0, 0
	if err := sc.Unscale(o); err != nil {
		t.Fatal(err)
	}
	if r0 != 2 || r1 != 1 {
		t.Errorf("Unscale read device 0 %d times and device 1 %d times, want 2 (one for its contiguous gradients, one for the view) and 1", r0, r1)
	}
	for i, p := range params {
		got := p.T.Grad().Float64s()
		for j := range got {
			if math.Float64bits(got[j]) != math.Float64bits(want[i][j]) && !(math.IsNaN(got[j]) && math.IsNaN(want[i][j])) {
				t.Errorf("%s: unscaled gradient[%d] = %v, the per-tensor unscale gives %v", p.Name, j, got[j], want[i][j])
			}
		}
	}
	if ran, err := sc.Step(o); ran || err != nil {
		t.Fatalf("Step: ran %v, err %v; want skipped", ran, err)
	}
	if sc.LastOverflow() != wantOverflow || wantOverflow != "w3" {
		t.Errorf("overflow blamed on %q, the per-tensor check names %q (want w3)", sc.LastOverflow(), wantOverflow)
	}
}

// oldUnscale is the per-tensor unscale the Scaler did before: the
// gradient divided by 1024 in F16 on the cpu device (through a transpose
// when transposed) and its Tensor.SumSquares.
func oldUnscale(dev *device.Device, g []float64, shape []int, transposed bool) ([]float64, float64) {
	t := autograd.New(dev, dtype.F16, device.Gradient, shape...)
	defer t.Release()
	t.SetFloat64s(g)
	v := t
	if transposed {
		v = t.T()
	}
	v.ScaleInPlace(1.0 / 1024)
	ss := v.SumSquares()
	return v.Float64s(), ss
}
