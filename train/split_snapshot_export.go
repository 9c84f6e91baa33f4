package train

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/safetensors"
)

// mergeStages adds to m the model tensors of the pipeline stages after
// the first of the split snapshot at path (snap: rank 0's record, the
// first stage's), as ExportModel does for data-parallel shards: each
// stage's file of data-parallel copy 0 is read and checked in turn (its
// checksums, its set, its layout) and its model tensors copied out, so
// that one file at a time is held. Layouts that
// slice tensors (--tp above 1) or cut them into ZeRO pieces are refused:
// merging those is not available yet.
func mergeStages(path string, snap Snapshot, m *safetensors.File) error {
	l := snap.Split
	if l.TP > 1 || l.Zero > 0 {
		return fmt.Errorf("a split snapshot (%s): export is not available yet for --tp or --zero above 0 with --tp/--pp snapshots (only --pp stages are merged); resume it with that layout", l.Flags())
	}
	shape := parallel.MeshShape{Data: l.DP, Tensor: l.TP, Pipe: l.PP}
	for p := 1; p < l.PP; p++ {
		file := ShardPath(path, shape.Rank(0, 0, p), l.Ranks)
		f, s, err := readSnapshot(file)
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", file, err)
		case s.Split == nil || s.Split.Flags() != l.Flags():
			return fmt.Errorf("%s: not a file of the split snapshot of %s", file, l.Flags())
		case s.Set != snap.Set:
			return fmt.Errorf("%s and %s are files of different saves (sets %d and %d): the snapshot is incomplete", path, file, snap.Set, s.Set)
		}
		for name, t := range f.Tensors {
			if n, ok := strings.CutPrefix(name, "model."); ok {
				t.Data = bytes.Clone(t.Data)
				m.Tensors[n] = t
			}
		}
	}
	return nil
}
