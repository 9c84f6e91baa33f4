package train

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
)

// Sharded snapshots: every rank of a data-parallel run writes its own file
// (ShardPath) with what it holds of the model state — under stage 0 every
// parameter, under stages 1–3 its pieces of the flat buffer
// ("model.bucket<k>.rank<r>", the optimizer's Params), which under stage 3
// are its shard, never gathered — the model's buffers, its optimizer state
// ("optim.…": its shard of m and v, the F32 masters, with offload the
// host's "master.…"), and its own Snapshot record (step, loss, loss
// scaler, data order and generators, configuration) with its ShardLayout
// and the save's Set.

// ShardPath returns the file of rank's part of the sharded snapshot path
// of ranks ranks: path itself for rank 0 (so that --resume path finds the
// run's configuration there), "<path>.rank<r>-of-<N>" for the others.
func ShardPath(path string, rank, ranks int) string {
	if rank == 0 {
		return path
	}
	return fmt.Sprintf("%s.rank%d-of-%d", path, rank, ranks)
}

// stagedSuffix names a shard written but not yet kept: SaveShard renames
// it to its file when every rank has written its own.
const stagedSuffix = ".new"

// SaveShard writes the rank's shard of a data-parallel snapshot at path
// (to ShardPath(path, rank, N)): the model tensors the rank holds, o's
// state and snap with the rank's layout. Every rank calls it (it is a
// collective). The save is two-phase: each rank writes its file under a
// staged name (atomically: safetensors.WriteFile), the ranks exchange
// whether they succeeded, and only when all did does each rename its
// file into place; otherwise every rank removes its staged file and the
// old snapshot stays as it was. (A rename that fails after others
// succeeded leaves shards of two saves: their Sets differ, and LoadShard
// refuses them.)
func SaveShard(path string, d *parallel.DDP, m nn.Module, o optim.Optimizer, snap Snapshot) error {
	lay := d.ShardLayout()
	file := ShardPath(path, lay.Rank, lay.Ranks)
	fail := func(err error) error { return fmt.Errorf("snapshot %s: %w", file, err) }
	sets, err := d.Exchange(1 + rand.IntN(parallel.ExchangeMax-1))
	if err != nil {
		return fail(err)
	}
	snap.Shard, snap.Set = &lay, sets[0]
	staged := file + stagedSuffix
	werr := writeSnapshot(staged, shardTensors(m, o), o, snap)
	ok := 1
	if werr != nil {
		ok = 0
	}
	oks, err := d.Exchange(ok)
	if werr != nil || err != nil || slices.Index(oks, 0) >= 0 {
		if werr == nil {
			os.Remove(staged)
		}
		switch {
		case werr != nil:
			return fmt.Errorf("%w; the old snapshot is kept", werr)
		case err != nil:
			return fail(fmt.Errorf("%w; the old snapshot is kept", err))
		}
		return fail(fmt.Errorf("rank %d could not write its shard; the old snapshot is kept", slices.Index(oks, 0)))
	}
	if err := os.Rename(staged, file); err != nil {
		os.Remove(staged)
		return fail(err)
	}
	return nil
}

// LoadShard restores the rank's shard of the data-parallel snapshot at
// path into m (through d) and o, and returns the rank's Snapshot. Every
// rank calls it (it is a collective). It refuses a single-device snapshot,
// a shard written by another layout (naming both: ranks, ZeRO stage,
// offload, dtype, buckets), shards of different saves, and a corrupt file
// (the CRC-32C of every tensor and of the metadata are checked when the
// file is read); everything is checked before the rank's state is
// written. Then every rank's parameters are made whole again from the
// pieces (Optimizer.Gather), with no gathering under stage 3.
func LoadShard(path string, d *parallel.DDP, m nn.Module, o optim.Optimizer) (Snapshot, error) {
	lay := d.ShardLayout()
	file := ShardPath(path, lay.Rank, lay.Ranks)
	fail := func(err error) (Snapshot, error) { return Snapshot{}, fmt.Errorf("resume from %s: %w", file, err) }
	g, ok := o.(interface{ Gather() error })
	if !ok {
		return fail(fmt.Errorf("the optimizer %T is not a parallel.Optimizer", o))
	}
	f, snap, err := readSnapshot(file)
	switch {
	case err != nil:
		return fail(err)
	case snap.Split != nil:
		return fail(fmt.Errorf("a rank's file of a split snapshot; this run is %s: resume it with %s", lay, snap.Split.Flags()))
	case snap.Shard == nil:
		return fail(fmt.Errorf("a single-device snapshot; this run is %s: resume it without --ranks, --zero and --offload", lay))
	case !snap.Shard.Equal(lay) && snap.Shard.String() == lay.String():
		return fail(fmt.Errorf("the snapshot was written by %s, as this run is, but of parameters of other names, shapes or places: another model", lay))
	case !snap.Shard.Equal(lay):
		return fail(fmt.Errorf("the snapshot was written by %s; this run is %s: resume with the snapshot's --ranks, --zero, --offload and precision", snap.Shard, lay))
	case snap.Set <= 0 || snap.Set >= parallel.ExchangeMax:
		return fail(fmt.Errorf("snapshot metadata: set %d: want a number in [1, %d)", snap.Set, parallel.ExchangeMax))
	}
	sets, err := d.Exchange(snap.Set)
	if err != nil {
		return fail(err)
	}
	for q, s := range sets {
		if s != sets[0] {
			return fail(fmt.Errorf("%s and %s are shards of different saves (sets %d and %d): the snapshot is incomplete",
				ShardPath(path, 0, lay.Ranks), ShardPath(path, q, lay.Ranks), sets[0], s))
		}
	}
	ts := shardTensors(m, o)
	dev := o.Params()[0].T.Device()
	for _, t := range o.State().Tensors {
		dev = t.Device() // with offload, the host's
		break
	}
	if err := loadInto(f, snap, ts, dev, o); err != nil {
		return fail(err)
	}
	if err := g.Gather(); err != nil {
		return fail(err)
	}
	return snap, nil
}

// shardTensors returns what the rank holds of the model's state, by name:
// the optimizer's parameters (the model's under stage 0, the rank's pieces
// under stages 1–3) and the model's buffers.
func shardTensors(m nn.Module, o optim.Optimizer) map[string]*autograd.Tensor {
	ts := map[string]*autograd.Tensor{}
	for _, p := range o.Params() {
		ts[p.Name] = p.T
	}
	for _, p := range m.Params() {
		if p.Buffer {
			ts[p.Name] = p.T
		}
	}
	return ts
}

// offloadFlag is " --offload" when on.
func offloadFlag(on bool) string {
	if on {
		return " --offload"
	}
	return ""
}

// checkShards checks, before any work, that path is rank 0's file of a
// sharded snapshot (of layout l) and that the other ranks' files exist.
func checkShards(path string, l *parallel.ShardLayout) error {
	if l.Rank != 0 {
		return Usagef("--resume %s: rank %d's shard of a snapshot of %d ranks: give rank 0's file, %s", path, l.Rank, l.Ranks,
			strings.TrimSuffix(path, fmt.Sprintf(".rank%d-of-%d", l.Rank, l.Ranks)))
	}
	for q := 1; q < l.Ranks; q++ {
		f := ShardPath(path, q, l.Ranks)
		if _, err := os.Stat(f); err != nil {
			return Usagef("--resume %s: a snapshot of %d ranks, but rank %d's shard %s: %w", path, l.Ranks, q, f, errors.Unwrap(err))
		}
	}
	return nil
}

// checkResumeLayout refuses, before any work, a --resume snapshot whose
// kind does not fit the run: a shard of a data-parallel snapshot resumed
// on one device, a single-device snapshot on ranks, or a sharded one with
// another --ranks, --zero or --offload (naming both; LoadShard checks the
// rest of the layout: the dtype and the buckets).
func (c *Common) checkResumeLayout() error {
	if c.resumed == nil {
		return nil
	}
	if err := c.checkResumeSplit(); err != nil || c.Split() {
		return err
	}
	l := c.resumed.Shard
	mine := fmt.Sprintf("--ranks %d --zero %d%s", c.Ranks, c.Zero, offloadFlag(c.Offload))
	switch {
	case l == nil && c.Parallel():
		return Usagef("--resume %s: a single-device snapshot, and this run is data-parallel (%s): resume it without --ranks, --zero and --offload", c.Resume, mine)
	case l == nil:
		return nil
	case !c.Parallel():
		return Usagef("--resume %s: a shard of a data-parallel snapshot (%s), and this run is on one device: resume it with --ranks %d --zero %d%s", c.Resume, l, l.Ranks, l.Zero, offloadFlag(l.Offload))
	case l.Ranks != c.Ranks || l.Zero != c.Zero || l.Offload != c.Offload:
		return Usagef("--resume %s: a snapshot of --ranks %d --zero %d%s (%s), and this run is %s: resume it with the snapshot's", c.Resume, l.Ranks, l.Zero, offloadFlag(l.Offload), l, mine)
	}
	return nil
}

// checkResumeSplit refuses, before any work, a split snapshot resumed by a
// run that is not split, and a --tp/--pp run resuming anything but a split
// snapshot of its own layout (naming both).
func (c *Common) checkResumeSplit() error {
	l := c.resumed.Split
	mine := fmt.Sprintf("--tp %d --pp %d --ranks %d --zero %d", max(c.TP, 1), max(c.PP, 1), c.Ranks, c.Zero)
	switch {
	case l == nil && !c.Split():
		return nil
	case l == nil:
		return Usagef("--resume %s: not a split snapshot, and this run is %s: resume it without --tp and --pp", c.Resume, mine)
	case !c.Split():
		return Usagef("--resume %s: a split snapshot of %s, and this run is not split: resume it with %s", c.Resume, l.Flags(), l.Flags())
	case l.Flags() != mine:
		return Usagef("--resume %s: a split snapshot of %s, and this run is %s: resume it with the snapshot's layout", c.Resume, l.Flags(), mine)
	}
	return checkShards(c.Resume, &parallel.ShardLayout{Rank: l.Rank, Ranks: l.Ranks})
}
