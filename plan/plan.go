package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// Rank is one rank's predicted memory: the peak of each tag and of all
// together, in exact bytes.
type Rank struct {
	Device string `json:"device"`
	// Layout is the rank's part of a split model ("tp 1/2", "stage 3/16";
	// "" when every rank holds the whole model) and Params the number of
	// parameters it holds.
	Layout string `json:"layout,omitempty"`
	Params int64  `json:"params"`
	train.PeakBytes
	// ModelState is parameter + gradient + optimizer (their peaks): the
	// "model states" of the ZeRO paper.
	ModelState int64 `json:"model_state_bytes"`
	// AtPeak is what each tag held at the moment the total peaked: its
	// tags add up to its Total, the peak (the tags' own peaks, above, may
	// come at other moments and need not add up).
	AtPeak train.PeakBytes `json:"at_peak"`
	// Host is the host device's memory: the offload host's, the offloaded
	// activations' or the step-in-backward undo copies' (nil without any).
	Host *train.PeakBytes `json:"host,omitempty"`
	// AllocatedPeak is the peak of the blocks at the sizes they occupy
	// (device.Stats.Allocated.Peak): the bytes a capacity must hold. A
	// step fits a device exactly when its capacity is at least this.
	AllocatedPeak int64 `json:"allocated_peak_bytes"`
	// Stats is the device's whole accounting after the last step (its
	// Device and Capacity are the meta device's in a prediction).
	Stats device.Stats `json:"-"`
}

// Prediction is the planner's answer.
type Prediction struct {
	Config Config `json:"-"`
	Model  string `json:"model"`
	Params int64  `json:"params"`
	Batch  int    `json:"batch"`
	Seq    int    `json:"seq,omitempty"`
	Image  int    `json:"image,omitempty"`
	Ranks  []Rank `json:"ranks"`
	// OOM is the out-of-memory error when the step does not fit Capacity.
	OOM *device.OOMError `json:"-"`
	// Timeline is rank 0's last step (with Config.Timeline).
	Timeline *device.Timeline `json:"-"`
	// Seconds is the wall time of the last step and Loss its loss (on
	// meta devices: no arithmetic, loss 0).
	Seconds float64 `json:"-"`
	// ActivationBudget is what Config.ActivationBudget chose (nil without).
	ActivationBudget *ActivationPlan `json:"activation_budget,omitempty"`
	Loss             float64         `json:"-"`
}

// Measure runs c's step for real, on devices of kind c.Device: what
// Predict predicts. They are cpu devices, or cuda:0…cuda:Ranks-1 opened
// through device/cuda, of capacity c.Capacity (0: the driver's free
// memory).
func Measure(c Config) (*Prediction, error) {
	c.measure = true
	return Predict(c)
}

// Predict runs c's training step on meta devices and returns every rank's
// exact memory on devices of kind c.Device (a cuda plan's meta devices
// hold cuBLAS's workspace first, as a GPU does: Config.Resident). A step that does not fit c.Capacity is not an error: the
// prediction's OOM says so (with what was live when it ran out). A step
// that needs more than MaxBytes on a device is one.
func Predict(c Config) (pred *Prediction, err error) {
	if c.ActivationBudget > 0 && c.activationModes == nil {
		return predictActivationBudget(c)
	}
	c, m, err := c.resolved()
	if err != nil {
		return nil, err
	}
	p := &Prediction{Config: c, Model: m.Name, Batch: c.Batch}
	if m.Kind == "gpt" {
		p.Seq = c.Seq
	} else {
		p.Image = c.Image
	}
	ds := newDevices(c)
	defer func() { // the devices' statistics stay readable after Close
		// A failed step gives back all it allocated, so what a device
		// still holds here is a leak, after an out-of-memory step too.
		if cerr := ds.close(); err == nil && cerr != nil {
			pred, err = nil, fmt.Errorf("plan: %w", cerr)
		}
	}()
	res := make([]result, c.world())
	distributed := c.Ranks > 1 || c.Zero > 0 || c.Offload
	run := func(rank int, comm parallel.Communicator) error {
		if err := ds.open(rank); err != nil {
			return err
		}
		var err error
		res[rank], err = step(c, m, ds.dev[rank], ds.hosts[rank], comm, distributed, rank == 0 && c.Timeline)
		return err
	}
	switch {
	case c.split():
		err = runMesh(c, m, ds, res)
	case distributed:
		err = parallel.Run(parallel.NewGroup(c.world()), func(cm parallel.Communicator) error { return run(cm.Rank(), cm) })
	default:
		err = run(0, nil)
	}
	var oom *device.OOMError
	if errors.As(err, &oom) {
		if oom.Capacity == MaxBytes {
			return nil, fmt.Errorf("plan: the step needs more than the 4 EiB (2^62 bytes) a plan counts on %s: lower the batch, the image or the sequence", oom.Device)
		}
		p.OOM, err = oom, nil
	}
	if err != nil {
		return nil, err
	}
	p.Params, p.Timeline, p.Seconds, p.Loss = res[0].params, res[0].timeline, res[0].seconds, res[0].loss
	if c.split() {
		if p.Params, err = wholeParams(c, m); err != nil {
			return nil, err
		}
	}
	for i := range ds.dev {
		d := ds.dev[c.representative(i)]
		st := d.Stats()
		r := Rank{Device: d.Name(), Layout: c.layout(i), Params: res[c.representative(i)].params, PeakBytes: train.Peaks(st), AtPeak: atPeak(st), AllocatedPeak: st.Allocated.Peak, Stats: st}
		r.ModelState = r.Parameter + r.Gradient + r.Optimizer
		if i != c.representative(i) {
			r.Device = fmt.Sprintf("%s (as %s)", strings.Split(d.Name(), ":")[0]+":"+fmt.Sprint(i), d.Name())
		}
		if ds.hosts[i] != nil {
			h := train.Peaks(ds.hosts[i].Stats())
			r.Host = &h
		}
		p.Ranks = append(p.Ranks, r)
	}
	return p, nil
}

// closeAll closes the devices of a run (nil entries are skipped) and
// returns what they still held as a *device.LeakError.
func closeAll(lists ...[]*device.Device) error {
	var errs []error
	for _, l := range lists {
		for _, d := range l {
			if d != nil {
				errs = append(errs, d.Close())
			}
		}
	}
	return errors.Join(errs...)
}

// atPeak reads Stats.AtPeak as PeakBytes.
func atPeak(st device.Stats) train.PeakBytes {
	a := func(t device.Tag) int64 { return st.AtPeak[t] }
	return train.PeakBytes{
		Total: st.Requested.Peak, Parameter: a(device.Parameter), Gradient: a(device.Gradient),
		Optimizer: a(device.Optimizer), Activation: a(device.Activation), Workspace: a(device.Workspace),
		Communication: a(device.Communication), Other: a(device.Other),
	}
}

// result is what a rank's run returns besides its device's statistics.
type result struct {
	params   int64
	timeline *device.Timeline
	seconds  float64
	loss     float64
}
