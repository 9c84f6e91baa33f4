package train

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/safetensors"
)

// Snapshots of split runs: every rank of a tensor-, pipeline- or composed
// mesh writes its own file (ShardPath of its world rank) with what it
// holds — its parameter shards or its stage's parameters (under ZeRO its
// pieces of the flat buffer), its optimizer state, and its Snapshot
// record (step, loss scaler, generators, data order) with its SplitLayout
// — by the two-phase scheme of SaveShard, agreed over the mesh's world.

// SplitLayout is the mesh layout a rank's file of a split snapshot was
// written by: resuming with another one is refused.
type SplitLayout struct {
	// Rank is the world rank, of Ranks = TP·PP·DP.
	Rank  int `json:"rank"`
	Ranks int `json:"ranks"`
	TP    int `json:"tp"`
	PP    int `json:"pp"`
	DP    int `json:"dp"`
	Zero  int `json:"zero"`
	// Tensors are the rank's model tensors, by name, with their shapes.
	Tensors []SplitTensor `json:"tensors"`
}

// SplitTensor is one model tensor of a rank's part.
type SplitTensor struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

// Flags names the layout's flags: "--tp 2 --pp 2 --ranks 8 --zero 1".
func (l SplitLayout) Flags() string {
	return fmt.Sprintf("--tp %d --pp %d --ranks %d --zero %d", l.TP, l.PP, l.Ranks, l.Zero)
}

// equal reports whether l and o are the same layout.
func (l SplitLayout) equal(o SplitLayout) bool {
	return l.Rank == o.Rank && l.Ranks == o.Ranks && l.TP == o.TP && l.PP == o.PP && l.DP == o.DP && l.Zero == o.Zero &&
		slices.EqualFunc(l.Tensors, o.Tensors, func(a, b SplitTensor) bool { return a.Name == b.Name && slices.Equal(a.Shape, b.Shape) })
}

// layout returns the rank's SplitLayout on mesh m.
func (g *SplitGPT) layout(m *parallel.Mesh) SplitLayout {
	l := SplitLayout{Rank: m.World.Rank(), Ranks: m.World.Size(), TP: max(g.cfg.TP, 1), PP: max(g.cfg.PP, 1),
		DP: max(g.cfg.DP, 1), Zero: g.cfg.Zero}
	for n, t := range shardTensors(g, g.Opt) {
		l.Tensors = append(l.Tensors, SplitTensor{Name: n, Shape: t.Shape()})
	}
	sort.Slice(l.Tensors, func(i, j int) bool { return l.Tensors[i].Name < l.Tensors[j].Name })
	return l
}

// Steps returns the optimizer steps the rank has taken (skipped ones
// included); SetSteps sets the counter (when resuming).
func (g *SplitGPT) Steps() int {
	if g.st != nil {
		return g.st.Steps()
	}
	return g.steps
}

// SetSteps sets the step counter, which the learning-rate schedule reads.
func (g *SplitGPT) SetSteps(n int) {
	if g.st != nil {
		g.st.SetSteps(n)
	}
	g.steps = n
}

// Save writes the rank's file of a split snapshot at path (ShardPath of
// its world rank): its part of the model, its optimizer state, its loss
// scaler's state and snap (Step set to Steps) with its SplitLayout. Every
// rank of m calls it (a collective over m.World). Two-phase, as
// SaveShard: each rank writes a staged file, the ranks agree that all
// succeeded, and only then rename them into place; otherwise every staged
// file is removed and the old snapshot stays as it was.
func (g *SplitGPT) Save(path string, m *parallel.Mesh, snap Snapshot) error {
	lay := g.layout(m)
	file := ShardPath(path, lay.Rank, lay.Ranks)
	fail := func(err error) error { return fmt.Errorf("snapshot %s: %w", file, err) }
	dev := g.Params()[0].T.Device()
	sets, err := parallel.ExchangeOver(m.World, dev, 1+rand.IntN(parallel.ExchangeMax-1))
	if err != nil {
		return fail(err)
	}
	snap.Split, snap.Set, snap.Step = &lay, sets[0], g.Steps()
	if s := g.Scaler.State(); g.Scaler.Enabled() {
		snap.Scaler = &s
	}
	staged := file + stagedSuffix
	werr := writeSnapshot(staged, shardTensors(g, g.Opt), g.Opt, snap)
	if err := agree(m, dev, werr, func() { os.Remove(staged) }); err != nil {
		return fail(err)
	}
	if err := os.Rename(staged, file); err != nil {
		os.Remove(staged)
		return fail(err)
	}
	return nil
}

// agree is the second phase of a two-phase operation over m's world: it
// exchanges whether this rank's first phase succeeded (err nil) and
// returns an error naming the first rank that failed — this rank's own
// err when it is the one — running undo first when this rank succeeded
// but another did not.
func agree(m *parallel.Mesh, dev *device.Device, err error, undo func()) error {
	ok := 1
	if err != nil {
		ok = 0
	}
	oks, xerr := parallel.ExchangeOver(m.World, dev, ok)
	if err != nil {
		return fmt.Errorf("%w; the old state is kept", err)
	}
	if xerr != nil || slices.Index(oks, 0) >= 0 {
		undo()
	}
	if xerr != nil {
		return fmt.Errorf("%w; the old state is kept", xerr)
	}
	if q := slices.Index(oks, 0); q >= 0 {
		return fmt.Errorf("world rank %d failed; the old state is kept", q)
	}
	return nil
}

// readSplit reads the rank's file and checks it against lay: a split
// snapshot of this layout and of a valid set, whose model tensors fit.
func (g *SplitGPT) readSplit(file string, lay SplitLayout) (*safetensors.File, Snapshot, error) {
	f, snap, err := readSnapshot(file)
	switch {
	case err != nil:
		return nil, snap, err
	case snap.Split == nil && snap.Shard != nil:
		return nil, snap, fmt.Errorf("a shard of a data-parallel snapshot (%s); this run is %s: resume it with --ranks %d --zero %d and no --tp or --pp", snap.Shard, lay.Flags(), snap.Shard.Ranks, snap.Shard.Zero)
	case snap.Split == nil:
		return nil, snap, fmt.Errorf("a single-device snapshot; this run is %s: resume it without --tp, --pp, --ranks and --zero", lay.Flags())
	case snap.Split.Flags() != lay.Flags() || snap.Split.Rank != lay.Rank:
		return nil, snap, fmt.Errorf("the snapshot was written by %s (world rank %d); this run is %s (world rank %d): resume with the snapshot's layout", snap.Split.Flags(), snap.Split.Rank, lay.Flags(), lay.Rank)
	case !snap.Split.equal(lay):
		return nil, snap, fmt.Errorf("the snapshot was written by %s, as this run is, but of tensors of other names or shapes: another model", lay.Flags())
	case snap.Set <= 0 || snap.Set >= parallel.ExchangeMax:
		return nil, snap, fmt.Errorf("snapshot metadata: set %d: want a number in [1, %d)", snap.Set, parallel.ExchangeMax)
	}
	return f, snap, nil
}
