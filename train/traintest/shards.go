package traintest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/headroom-ml/headroom/safetensors"
	"github.com/headroom-ml/headroom/train"
)

// SameShards fails unless every rank's shard of the snapshots a and b
// holds the same tensors, byte for byte, and the same record but for the
// save's set: step, loss, optimizer scalars, scaler, generators, data
// order, layout, configuration. Shard r of a is train.ShardPath(a, r,
// ranks).
func SameShards(t *testing.T, what, a, b string, ranks int) {
	t.Helper()
	for r := range ranks {
		fa, fb := readShard(t, train.ShardPath(a, r, ranks)), readShard(t, train.ShardPath(b, r, ranks))
		if len(fa.Names) < 2 || !reflect.DeepEqual(fa.Names, fb.Names) {
			t.Fatalf("%s rank %d: tensors %q and %q", what, r, fa.Names, fb.Names)
		}
		for _, n := range fa.Names {
			if !bytes.Equal(fa.Tensors[n].Data, fb.Tensors[n].Data) {
				t.Errorf("%s rank %d: tensor %q differs after resuming", what, r, n)
			}
		}
		sa, sb := record(t, fa), record(t, fb)
		if sa.Set == 0 || sb.Set == 0 || shardRank(sa) != r {
			t.Errorf("%s rank %d: sets %d and %d, layouts %v %v", what, r, sa.Set, sb.Set, sa.Shard, sa.Split)
		}
		sa.Set, sb.Set = 0, 0
		if !reflect.DeepEqual(sa, sb) || sa.Loss == 0 {
			t.Errorf("%s rank %d: records differ after resuming:\n%+v\n%+v", what, r, sa, sb)
		}
	}
}

// readShard reads a shard file.
func readShard(t *testing.T, path string) *safetensors.File {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// record returns f's snapshot record.
func record(t *testing.T, f *safetensors.File) train.Snapshot {
	t.Helper()
	var s train.Snapshot
	if err := json.Unmarshal([]byte(f.Metadata["headroom.snapshot"]), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// shardRank returns the rank a shard's record says wrote it (its
// data-parallel or its split layout's; -1 with neither).
func shardRank(s train.Snapshot) int {
	switch {
	case s.Shard != nil:
		return s.Shard.Rank
	case s.Split != nil:
		return s.Split.Rank
	}
	return -1
}
