package train_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/train"
)

// TestMonitorAlertsAndNamesWhatGrew runs steps whose activations are
// steady but which keep (leak) one more cached tensor each step, on a
// 4 MiB device: the monitor must alert before the device runs out and
// name the leaking tag and creator.
func TestMonitorAlertsAndNamesWhatGrew(t *testing.T) {
	dev := cpu.New(0, device.Options{Capacity: 4 << 20})
	var log bytes.Buffer
	m := &train.Monitor{Log: &log}
	var kept []*autograd.Tensor
	defer func() {
		for _, k := range kept {
			k.Release()
		}
	}()
	var alert *train.Alert
	for step := 0; step < 50; step++ {
		m.Begin(dev)
		s := autograd.NewScope()
		err := autograd.Try(func() {
			x := s.Zeros(dev, dtype.F32, 64, 1024) // 256 KiB of activations per step
			y := x.Exp()
			cache := y.Sum(true, 1).Expand(64, 1024).Contiguous() // 256 KiB, kept: the leak
			kept = append(kept, s.Keep(cache))
		})
		s.Release()
		if err != nil {
			t.Fatalf("step %d ran out of memory before the monitor alerted: %v", step, err)
		}
		if err := m.End(step); err != nil {
			if !errors.As(err, &alert) {
				t.Fatalf("End: %v", err)
			}
			break
		}
	}
	if alert == nil {
		t.Fatal("no alert")
	}
	msg := alert.Error()
	t.Log(msg)
	if alert.Peak <= 9*(4<<20)/10 || !strings.Contains(msg, "activation +") || !strings.Contains(msg, "contiguous") {
		t.Errorf("alert %q should report a peak over 90%% and name the activation tag and the creator (contiguous)", msg)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != alert.Step+1 {
		t.Errorf("%d log lines for %d steps", len(lines), alert.Step+1)
	}
	var l train.StepLog
	if err := json.Unmarshal([]byte(lines[0]), &l); err != nil || l.Step != 0 || l.PeakTag["activation"] == 0 {
		t.Errorf("first log line %q: %v", lines[0], err)
	}
}
