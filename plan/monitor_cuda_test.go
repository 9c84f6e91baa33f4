package plan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/train"
)

// monitorLine runs one monitored "step" on dev that allocates n bytes and
// keeps them, and returns the log line and the block.
func monitorLine(t *testing.T, dev *device.Device, n int64) (map[string]any, train.StepLog, *device.Block) {
	t.Helper()
	var log bytes.Buffer
	m := &train.Monitor{Log: &log, Threshold: 2}
	m.Begin(dev)
	b, err := dev.Alloc(n, device.Label{Tag: device.Activation, Op: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.End(0); err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	var line train.StepLog
	if err := json.Unmarshal(log.Bytes(), &keys); err != nil {
		t.Fatalf("log %q: %v", log.String(), err)
	}
	if err := json.Unmarshal(log.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	return keys, line, b
}

// TestMonitorLogsDriverMemory (train's Monitor, tested here where the
// emulated cuda device is loaded for the whole test binary: train's own
// tests check the no-driver error, which the driver's one-time load would
// then remember): on a cuda device each --mem-log line adds
// the driver's free and total bytes beside the allocator's. Total is the
// emulated GPU's memory; the driver's free bytes leave room for at least
// the allocator's reserved segments, and fall by at least a new 64 MiB
// block's segment when one is allocated. A cpu device's line has no
// driver fields.
func TestMonitorLogsDriverMemory(t *testing.T) {
	dev := cudatest.Open(t, 0, device.Options{})
	_, first, b1 := monitorLine(t, dev, 1<<20)
	defer b1.Release()
	if !cudatest.Real() && first.DriverTotal != cudatest.DefaultMemory {
		t.Errorf("driver_total %d, want the emulated GPU's %d", first.DriverTotal, int64(cudatest.DefaultMemory))
	}
	if first.DriverTotal <= 0 || first.DriverFree <= 0 || first.DriverFree > first.DriverTotal-first.Reserved {
		t.Errorf("driver free %d of %d with %d reserved by the allocator: want 0 < free ≤ total − reserved", first.DriverFree, first.DriverTotal, first.Reserved)
	}
	_, second, b2 := monitorLine(t, dev, 64<<20)
	defer b2.Release()
	grew := second.Reserved - first.Reserved
	if grew < 64<<20 || first.DriverFree-second.DriverFree < grew {
		t.Errorf("after a 64 MiB block: reserved grew by %d, driver free fell by %d (%d → %d): want both ≥ 64 MiB, the fall ≥ the growth",
			grew, first.DriverFree-second.DriverFree, first.DriverFree, second.DriverFree)
	}
	t.Logf("cuda: driver free %d → %d of %d; allocator reserved %d → %d", first.DriverFree, second.DriverFree, second.DriverTotal, first.Reserved, second.Reserved)

	cd := cpu.New(0, device.Options{})
	defer cd.Close()
	keys, _, b3 := monitorLine(t, cd, 1<<20)
	defer b3.Release()
	for k := range keys {
		if strings.HasPrefix(k, "driver") {
			t.Errorf("a cpu device's log line has %s: %v", k, keys)
		}
	}
}
