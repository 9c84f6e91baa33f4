package train

import (
	"fmt"

	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/parallel"
)

// Load restores the rank's file of the split snapshot at path (Save's)
// into its part of the model, its optimizer and its loss scaler, sets its
// step counter, and returns the rank's Snapshot (the caller restores its
// generators and data order from it). Every rank of m calls it (a
// collective over m.World). Every rank first reads and checks its file —
// the checksums, the layout (a resume with another --tp, --pp, --ranks or
// --zero is refused naming both), the tensors' names and shapes — and
// the ranks agree that all files are good and of one save before any
// rank writes its state: a corrupt or missing shard is refused on every
// rank, naming it, with every rank's state unchanged.
func (g *SplitGPT) Load(path string, m *parallel.Mesh) (Snapshot, error) {
	lay := g.layout(m)
	file := ShardPath(path, lay.Rank, lay.Ranks)
	fail := func(err error) (Snapshot, error) { return Snapshot{}, fmt.Errorf("resume from %s: %w", file, err) }
	dev := g.Params()[0].T.Device()
	ts := shardTensors(g, g.Opt)
	f, snap, err := g.readSplit(file, lay)
	if err == nil {
		err = nn.CheckTensors(ts, f, "model.")
	}
	v := 0
	if err == nil {
		v = snap.Set
	}
	sets, xerr := parallel.ExchangeOver(m.World, dev, v)
	switch {
	case err != nil:
		return fail(err)
	case xerr != nil:
		return fail(xerr)
	}
	for q, s := range sets {
		other := ShardPath(path, q, lay.Ranks)
		if s == 0 {
			return fail(fmt.Errorf("world rank %d's shard %s was refused; nothing is loaded", q, other))
		}
		if s != sets[0] {
			return fail(fmt.Errorf("%s and %s are shards of different saves (sets %d and %d): the snapshot is incomplete", ShardPath(path, 0, lay.Ranks), other, sets[0], s))
		}
	}
	lerr := loadInto(f, snap, ts, dev, g.Opt)
	if lerr == nil && snap.Scaler != nil {
		lerr = g.Scaler.Load(*snap.Scaler)
	}
	if err := agree(m, dev, lerr, func() {}); err != nil {
		return fail(err)
	}
	if gather, ok := g.Opt.(interface{ Gather() error }); ok {
		if err := gather.Gather(); err != nil {
			return fail(err)
		}
	}
	g.SetSteps(snap.Step)
	return snap, nil
}
