package plan

import (
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/dtype"
)

// TestMain runs the package's tests with the emulated cuda device loaded
// (HEADROOM_CUDA_REAL=1: the machine's GPU).
func TestMain(m *testing.M) { cudatest.Main(m, 0, 1) }

// TestCUDAResidentIsWhatOpenAllocates: a freshly opened cuda device holds
// exactly what a cuda plan's meta device allocates first — one resident
// block, tag workspace, op cublas, of Config.Resident bytes for the
// emulator's compute capability (9.0, the default major).
func TestCUDAResidentIsWhatOpenAllocates(t *testing.T) {
	d := cudatest.Open(t, 0, device.Options{})
	c, _, err := Config{Model: "small", Device: CUDA}.resolved()
	if err != nil {
		t.Fatal(err)
	}
	live := d.Live()
	if len(live) != 1 || live[0].Tag != device.Workspace || live[0].Creator != "cublas" || live[0].Blocks != 1 {
		t.Fatalf("a fresh %s holds %+v, want one cublas workspace block", d.Name(), live)
	}
	if got, want := live[0].Bytes, c.Resident(); got != want || d.Stats().Requested.Current != want {
		t.Fatalf("a fresh %s holds %d bytes (workspace %d), want Config.Resident() = %d", d.Name(), d.Stats().Requested.Current, got, want)
	}
	if n := (Config{Device: CUDA, CUDAMajor: 8}).Resident(); n != 4<<20 {
		t.Errorf("Resident on sm_80 = %d, want 4 MiB", n)
	}
}

// TestCUDAPlanEqualsEmulatedRun plans each example's model for the cuda
// device (meta devices) and runs the same steps on the emulated GPU
// (Measure with Device cuda): the peak, each tag's peak, what each tag
// held at the peak and the whole device.Stats — requested, allocated and
// reserved counters, segments, the largest free block — are equal, plain,
// with autocast, with checkpointing and with 4 micro-batches. Shapes are
// tiny: the emulator runs each GPU thread as a host loop.
func TestCUDAPlanEqualsEmulatedRun(t *testing.T) {
	gpt := Config{Model: "transformer", Batch: 4, Seq: 8, Device: CUDA, Capacity: 256 << 20}
	img := Config{Model: "small", Batch: 4, Image: 8, Device: CUDA, Capacity: 256 << 20}
	techniques := []struct {
		name  string
		apply func(*Config)
	}{
		{"plain", func(*Config) {}},
		{"amp", func(c *Config) { c.AMP = dtype.BF16 }},
		{"checkpoint", func(c *Config) { c.Checkpoint = -1 }},
		{"accum4", func(c *Config) { c.Accum = 4 }},
	}
	for _, base := range []Config{img, gpt} {
		for _, tq := range techniques {
			c := base
			tq.apply(&c)
			t.Run(c.Model+"_"+tq.name, func(t *testing.T) { comparePlanToRun(t, c) })
		}
	}
}

// comparePlanToRun predicts c and measures it, and compares rank 0.
func comparePlanToRun(t *testing.T, c Config) {
	pred, err := Predict(c)
	if err != nil {
		t.Fatalf("predict: %v", err)
	}
	meas, err := Measure(c)
	if err != nil {
		t.Fatalf("measure on the cuda device: %v", err)
	}
	p, m := pred.Ranks[0], meas.Ranks[0]
	if m.Stats.Device != "cuda:0" {
		t.Fatalf("measured on %s, want cuda:0", m.Stats.Device)
	}
	if p.Total != m.Total || p.PeakBytes != m.PeakBytes || p.AtPeak != m.AtPeak || p.AllocatedPeak != m.AllocatedPeak {
		t.Errorf("predicted peak %d %+v (at peak %+v), measured on cuda %d %+v (at peak %+v)",
			p.Total, p.PeakBytes, p.AtPeak, m.Total, m.PeakBytes, m.AtPeak)
	}
	want := p.Stats
	want.Device = m.Stats.Device
	if want != m.Stats {
		t.Errorf("Stats differ:\n predicted %+v\n measured  %+v", want, m.Stats)
	}
	if m.Workspace < c.Resident() {
		t.Errorf("workspace peak %d below the cuBLAS workspace %d", m.Workspace, c.Resident())
	}
	t.Logf("peak %d bytes (workspace %d) predicted and measured on %s; allocated peak %d, reserved peak %d",
		p.Total, p.Workspace, m.Stats.Device, p.AllocatedPeak, p.Stats.Reserved.Peak)
}

// TestCUDAFitMeasured runs the fit search for real on the emulated GPU (one
// technique, a capacity a little above cuBLAS's workspace): the largest
// batch and its peak equal the prediction's, and that batch was run on
// the GPU within the capacity while the next did not fit.
func TestCUDAFitMeasured(t *testing.T) {
	c := Config{Model: "small", Image: 8, Device: CUDA}
	const capacity = 33<<20 + 200<<10
	pred, err := Fit(c, capacity, 4)
	if err != nil {
		t.Fatal(err)
	}
	meas, err := FitMeasured(c, capacity, 4, Techniques[:1], nil)
	if err != nil {
		t.Fatalf("measured on cuda: %v", err)
	}
	p, m := pred.Options[0], meas.Options[0]
	if p != m || m.MaxBatch < 1 {
		t.Errorf("fit on cuda: predicted %+v, measured %+v (want equal, max batch ≥ 1)", p, m)
	}
	t.Logf("%s in %d bytes: max batch %d (peak %d) predicted and measured on the emulated GPU", p.Technique, capacity, m.MaxBatch, m.Peak)
}
