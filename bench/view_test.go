package bench

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

// stepTimeline records a forward and a backward on a meta device.
func stepTimeline() *device.Timeline {
	d := meta.New(0, device.Options{})
	d.StartTimeline()
	a := d.MustAlloc(1<<20, device.Label{Tag: device.Activation, Op: "matmul", Scope: "gpt/block0", Phase: "forward"})
	g := d.MustAlloc(4096, device.Label{Tag: device.Gradient, Op: "grad", Phase: "backward"})
	a.Release()
	g.Release()
	return d.StopTimeline()
}

// TestWriteViews: each row with a timeline gets its page beside bench.json,
// named in the row's View, and the page reads back as the row's timeline;
// a row without one gets none.
func TestWriteViews(t *testing.T) {
	tl := stepTimeline()
	r := &Result{Rows: []Row{{Model: "transformer", Technique: "checkpoint + f16", Timeline: tl}, {Model: "resnet", Technique: "plain"}}}
	dir := t.TempDir()
	paths, err := r.writeViews(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "view-transformer-checkpoint___f16.html"
	if r.Rows[0].View != want || r.Rows[1].View != "" || len(paths) != 1 || paths[0] != filepath.Join(dir, want) {
		t.Fatalf("views %q and %q, paths %q; want %q, none and its path", r.Rows[0].View, r.Rows[1].View, paths, want)
	}
	f, err := os.Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	back, err := device.ReadHTML(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 1 || !reflect.DeepEqual(back[0], tl) {
		t.Errorf("the row's page reads back as %+v, want the row's timeline %+v", back, tl)
	}
}
