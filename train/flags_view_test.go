package train

import (
	"strings"
	"testing"
)

// TestCheckViewRefusesSeveralDevices: --mem-view records one device.
func TestCheckViewRefusesSeveralDevices(t *testing.T) {
	for _, c := range []Common{{Ranks: 2}, {TP: 2}, {PP: 2}} {
		c.MemView = "m.html"
		if err := c.checkView(); err == nil || !strings.Contains(err.Error(), "--mem-view m.html") {
			t.Errorf("%+v: %v, want a refusal naming --mem-view", c, err)
		}
	}
	if err := (&Common{View: View{MemView: "m.html"}, TP: 1, PP: 1, Ranks: 1}).checkView(); err != nil {
		t.Errorf("one device: %v", err)
	}
}
