package checkpoint_test

import (
	"strings"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
)

// TestMeasureRates: on cpu the probes give positive finite rates within a
// second, leave no block on either device, and a second call returns the
// cached rates at once; meta gives DefaultRates. Table prints the rates.
func TestMeasureRates(t *testing.T) {
	dev, host := cpu.New(7, device.Options{}), cpu.New(107, device.Options{})
	began := time.Now()
	r := checkpoint.MeasureRates(dev, host)
	took := time.Since(began)
	t.Logf("%+v in %v", r, took)
	if err := r.Check(); err != nil || took > time.Second {
		t.Fatalf("rates %+v (%v) in %v", r, err, took)
	}
	if dev.LiveBlocks() != 0 || host.LiveBlocks() != 0 {
		t.Errorf("the probes left %v on the device, %v on the host", dev.Live(), host.Live())
	}
	began = time.Now()
	if again := checkpoint.MeasureRates(dev, host); again != r || time.Since(began) > 10*time.Millisecond {
		t.Errorf("second call: %+v in %v, want the cached %+v", again, time.Since(began), r)
	}
	if m := checkpoint.MeasureRates(meta.New(0, device.Options{}), host); m != checkpoint.DefaultRates {
		t.Errorf("meta: %+v, want DefaultRates", m)
	}
	tab := checkpoint.Table(100, 90, []checkpoint.Decision{{Layer: 0, Mode: checkpoint.Offloaded, Freed: 64, Extra: 2e-3}}, r, "test")
	if !strings.Contains(tab, "offload") || !strings.Contains(tab, "2ms") || !strings.Contains(tab, "(test)") {
		t.Errorf("table:\n%s", tab)
	}
	if (checkpoint.Rates{FLOPS: 1, Memory: -1, Copy: 1}).Check() == nil {
		t.Error("a negative rate passes Check")
	}
}
