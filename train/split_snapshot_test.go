package train_test

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/train"
)

// TestSplitFileRefusedByOtherLoaders: a rank's file of a split snapshot
// (a record with a SplitLayout) is refused by LoadSnapshot, naming the
// layout to resume it with, with the model and optimizer unchanged, and
// by ExportModel (its tensors are one rank's slices, not the model).
func TestSplitFileRefusedByOtherLoaders(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	r := newSnapRun(t, dev, 1)
	defer r.release()
	path := filepath.Join(t.TempDir(), "split")
	lay := &train.SplitLayout{Rank: 0, Ranks: 8, TP: 2, PP: 2, DP: 2, Zero: 1}
	if err := train.SaveSnapshot(path, r.m, r.o, train.Snapshot{Step: 1, Split: lay, Set: 7}); err != nil {
		t.Fatal(err)
	}
	other := newSnapRun(t, dev, 2)
	defer other.release()
	before := other.state(true)
	_, err := train.LoadSnapshot(path, other.m, other.o)
	if err == nil || !strings.Contains(err.Error(), "a rank's file of a split snapshot, not a single-device one: resume it with --tp 2 --pp 2 --ranks 8 --zero 1") {
		t.Errorf("LoadSnapshot of a split file: %v", err)
	}
	if !maps.Equal(before, other.state(true)) {
		t.Error("a refused split file changed the model or the optimizer")
	}
	err = train.ExportModel(path, path+".model")
	if err == nil || !strings.Contains(err.Error(), "a split snapshot (--tp 2 --pp 2 --ranks 8 --zero 1): export is not available yet") {
		t.Errorf("ExportModel of a split file: %v", err)
	}
	t.Logf("refused: %v", err)
}
