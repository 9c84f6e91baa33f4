package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

// TestExport writes a snapshot, exports its model and loads the model
// file into a model built with another seed: its values are the
// snapshot's, bit for bit; a snapshot with one flipped byte is refused,
// writing nothing.
func TestExport(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	build := func(seed uint64) *nn.Sequential {
		b := nn.NewBuilder(dev, dtype.F32, seed)
		return nn.NewSequential(nn.NewLinear(b, "fc0", 3, 4, true), nn.NewLinear(b, "fc1", 4, 2, false))
	}
	m := build(1)
	defer nn.Release(m)
	opt, err := optim.NewAdamW(m.Params(), optim.AdamConfig{LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Release()
	dir := t.TempDir()
	snap, out := filepath.Join(dir, "s"), filepath.Join(dir, "m")
	if err := train.SaveSnapshot(snap, m, opt, train.Snapshot{Step: 1}); err != nil {
		t.Fatal(err)
	}
	if code, stdout, errs := call("export", snap, out); code != 0 || !strings.Contains(stdout, "wrote "+out) {
		t.Fatalf("export: exit %d, %q %q", code, stdout, errs)
	}
	m2 := build(2)
	defer nn.Release(m2)
	if _, err := nn.Load(out, m2); err != nil {
		t.Fatal(err)
	}
	for i, p := range m.Params() {
		if q := m2.Params()[i]; !bytes.Equal(p.T.Block().Bytes(), q.T.Block().Bytes()) {
			t.Errorf("%s differs after export and load", p.Name)
		}
	}
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	bad, out2 := filepath.Join(dir, "bad"), filepath.Join(dir, "m2")
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := call("export", bad, out2)
	if _, err := os.Stat(out2); code != train.ExitError || !strings.Contains(errs, "the file is corrupt") || !os.IsNotExist(err) {
		t.Errorf("export of a corrupt snapshot: exit %d, %q, out %v", code, errs, err)
	}
}
