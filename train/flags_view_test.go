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

// TestViewFromReport: the report names --mem-view's page relative to the
// report's folder, so the two can move together.
func TestViewFromReport(t *testing.T) {
	for _, c := range []struct{ report, page, want string }{
		{"out/r.json", "out/mem.html", "mem.html"},
		{"r.json", "views/mem.html", "views/mem.html"},
		{"out/r.json", "views/mem.html", "../views/mem.html"},
		{"out/r.json", "", ""},
	} {
		com := Common{Report: c.report, View: View{MemView: c.page}}
		if got := com.viewFromReport(); got != c.want {
			t.Errorf("--report %s --mem-view %q: report names %q, want %q", c.report, c.page, got, c.want)
		}
	}
}
