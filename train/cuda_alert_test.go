package train_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/train"
)

// leakSteps runs up to n steps under m on dev, each with 64 KiB of
// activations and one more 64 KiB tensor kept (a leak), and returns the
// monitor's alert (nil: none) and its log lines.
func leakSteps(t *testing.T, dev *device.Device, m *train.Monitor, n int) (*train.Alert, []train.StepLog) {
	t.Helper()
	var log bytes.Buffer
	m.Log = &log
	var kept []*autograd.Tensor
	defer func() {
		for _, k := range kept {
			k.Release()
		}
	}()
	var alert *train.Alert
	for step := range n {
		m.Begin(dev)
		s := autograd.NewScope()
		err := autograd.Try(func() {
			y := s.Zeros(dev, dtype.F32, 16, 1024).Exp()
			kept = append(kept, s.Keep(y.Sum(true, 1).Expand(16, 1024).Contiguous()))
		})
		s.Release()
		if err != nil {
			t.Fatalf("%s: step %d: %v", dev, step, err)
		}
		if err := m.End(step); err != nil {
			if !errors.As(err, &alert) {
				t.Fatalf("%s: End: %v", dev, err)
			}
			break
		}
	}
	var lines []train.StepLog
	for _, s := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var l train.StepLog
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("%s: log line %q: %v", dev, s, err)
		}
		lines = append(lines, l)
	}
	return alert, lines
}

// TestMemAlertOnCUDA: the monitor behind --mem-alert logs on cuda each
// step's memory as meta predicts it plus the cuBLAS workspace (peak,
// current, reserved, and each tag's peak), and alerts at the step where
// that prediction first passes the threshold — no earlier — with the peak
// and the growth (by tag and by creator) that meta's alert names.
func TestMemAlertOnCUDA(t *testing.T) {
	const capacity, steps, at = 64 << 20, 8, 5
	gd := cudatest.Open(t, 0, device.Options{Capacity: capacity})
	ws := cudatest.Workspace(t, gd)
	md := meta.New(0, device.Options{Capacity: capacity})
	defer md.Close()
	_, pred := leakSteps(t, md, &train.Monitor{Threshold: 2}, steps) // never alerts: the prediction
	// The threshold halfway between cuda's predicted peaks of steps at−1
	// and at.
	lo, hi := pred[at-1].Peak+ws, pred[at].Peak+ws
	if hi <= lo {
		t.Fatalf("meta's peaks %d then %d B: the leak does not grow", lo-ws, hi-ws)
	}
	th := float64(lo+hi) / 2 / capacity
	ga, glog := leakSteps(t, gd, &train.Monitor{Threshold: th}, steps)
	ma, _ := leakSteps(t, md, &train.Monitor{Threshold: th - float64(ws)/capacity}, steps)
	if ga == nil || ma == nil || ga.Step != at || ma.Step != at {
		t.Fatalf("alerts on cuda %v, meta %v; want both at step %d", ga, ma, at)
	}
	for i, l := range glog {
		want := pred[i]
		want.Peak, want.Current, want.Reserved, want.Capacity = want.Peak+ws, want.Current+ws, want.Reserved+ws, capacity
		want.PeakTag["workspace"] += ws
		// The driver's numbers are cuda's own (meta has no driver): sane,
		// then left out of the comparison.
		if l.DriverTotal <= 0 || l.DriverFree < 0 || l.DriverFree > l.DriverTotal-l.Reserved {
			t.Errorf("cuda's log line %d: driver free %d of %d with %d reserved, want 0 ≤ free ≤ total − reserved", i, l.DriverFree, l.DriverTotal, l.Reserved)
		}
		want.DriverFree, want.DriverTotal = l.DriverFree, l.DriverTotal
		if !reflect.DeepEqual(l, want) {
			t.Errorf("cuda's log line %d: %+v, want meta's plus the workspace %+v", i, l, want)
		}
	}
	if ga.Peak != ma.Peak+ws || ga.Capacity != capacity || !reflect.DeepEqual(ga.Grew, ma.Grew) || !reflect.DeepEqual(ga.Creators, ma.Creators) {
		t.Errorf("cuda's alert %q, want meta's plus the %d-byte workspace: %q", ga, ws, ma)
	}
	t.Log(ga)
}
