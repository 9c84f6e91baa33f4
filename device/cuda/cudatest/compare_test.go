package cudatest_test

import (
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/device/meta"
)

// TestWithWorkspace: the same allocations on an emulated cuda device and
// on meta give cuda's Stats as WithWorkspace predicts from meta's — a
// small block, a large one (a segment of its own), one freed — and one
// allocation more on cuda makes them differ.
func TestWithWorkspace(t *testing.T) {
	g := cudatest.Open(t, 0, device.Options{})
	m := meta.New(0, device.Options{})
	defer m.Close()
	ws := cudatest.Workspace(t, g)
	var held []*device.Block
	for _, n := range []int64{100, 3 << 20, 4096} {
		for _, d := range []*device.Device{g, m} {
			b, err := d.Alloc(n, device.Label{Tag: device.Activation, Op: "test"})
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, b)
		}
	}
	held[0].Release()
	held[1].Release()
	if want := cudatest.WithWorkspace(m.Stats(), g.Stats(), ws); g.Stats() != want {
		t.Errorf("cuda's Stats %+v, want %+v", g.Stats(), want)
	}
	extra, err := g.Alloc(8, device.Label{Tag: device.Activation, Op: "extra"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Stats() == cudatest.WithWorkspace(m.Stats(), g.Stats(), ws) {
		t.Error("one allocation more on cuda: the Stats still match")
	}
	extra.Release()
	for _, b := range held[2:] {
		b.Release()
	}
}
