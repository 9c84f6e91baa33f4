package device_test

import (
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

func TestProbeMeasuresAPartWithoutResettingPeaks(t *testing.T) {
	d := meta.New(0, device.Options{})
	a, _ := d.Alloc(1000, device.Label{Tag: device.Activation})
	big, _ := d.Alloc(5000, device.Label{Tag: device.Activation})
	big.Release()
	p := d.Probe()
	b, _ := d.Alloc(300, device.Label{Tag: device.Activation})
	c, _ := d.Alloc(200, device.Label{Tag: device.Workspace})
	b.Release()
	e, _ := d.Alloc(100, device.Label{Tag: device.Activation})
	p.Stop()
	f, _ := d.Alloc(10000, device.Label{Tag: device.Activation})
	if got := p.Peak(device.Activation); got != 1300 {
		t.Errorf("activation peak during the probe = %d, want 1300", got)
	}
	if got := p.Rise(device.Activation); got != 300 {
		t.Errorf("rise = %d, want 300", got)
	}
	if got := p.Rise(device.Workspace); got != 200 {
		t.Errorf("workspace rise = %d, want 200", got)
	}
	if got := p.TotalPeak(); got != 1500 {
		t.Errorf("total peak = %d, want 1500", got)
	}
	if got := d.Stats().ByTag[device.Activation].Peak; got != 11100 {
		t.Errorf("device peak = %d, want 11100 (the probe must not reset it)", got)
	}
	for _, x := range []*device.Block{a, c, e, f} {
		x.Release()
	}
}
