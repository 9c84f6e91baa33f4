package train

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/safetensors"
)

// Snapshot is what a resumed run needs besides the model's and the
// optimizer's tensors: where it was and the state of everything random.
// Resuming from it reproduces the uninterrupted run's following steps
// bit for bit.
type Snapshot struct {
	// Program is the program that wrote it ("resnet"); Config its run's
	// configuration: the value of every flag but those of one invocation
	// (Common.Config). A resumed run refuses a snapshot of another
	// program, and flags that change the run unless --override.
	Program string            `json:"program,omitempty"`
	Config  map[string]string `json:"config,omitempty"`
	Step    int               `json:"step"`
	// Loss is the last step's training loss: what a resumed run with no
	// step left to run reports as its final loss.
	Loss       float64                            `json:"loss,omitempty"`
	Optim      map[string]float64                 `json:"optim"`
	Scaler     *amp.ScalerState                   `json:"scaler,omitempty"`
	Generators map[string]autograd.GeneratorState `json:"generators,omitempty"`
	// Extra holds the program's own state (its data loader's, say).
	Extra json.RawMessage `json:"extra,omitempty"`
	// Shard, in a shard of a data-parallel snapshot (SaveShard), is the
	// layout of the rank that wrote it; Set is the same number in every
	// shard of one save and another in the next, so that shards of two
	// saves are not loaded together. Both are absent from single-device
	// snapshots.
	Shard *parallel.ShardLayout `json:"shard,omitempty"`
	Set   int                   `json:"set,omitempty"`
	// Split, in a rank's file of a split snapshot (SplitGPT.Save), is the
	// mesh layout that wrote it (Set as for Shard).
	Split *SplitLayout `json:"split,omitempty"`
}

const snapshotKey = "headroom.snapshot"

// SaveSnapshot writes the model's parameters and buffers ("model.<name>"),
// the optimizer's state tensors ("optim.<name>") and snap (with the
// optimizer's scalars) to one safetensors file, atomically: a failure
// leaves an existing file as it was.
func SaveSnapshot(path string, m nn.Module, o optim.Optimizer, snap Snapshot) error {
	ts, err := nn.StateTensors(m, "")
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	return writeSnapshot(path, ts, o, snap)
}

// writeSnapshot writes the model tensors ts ("model.<name>"), o's state
// ("optim.<name>") and snap with o's scalars to path, atomically.
func writeSnapshot(path string, ts map[string]*autograd.Tensor, o optim.Optimizer, snap Snapshot) error {
	all := map[string]*autograd.Tensor{}
	for n, t := range ts {
		all["model."+n] = t
	}
	st := o.State()
	for n, t := range st.Tensors {
		all["optim."+n] = t
	}
	snap.Optim = st.Scalars
	meta, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	if err := nn.WriteTensors(path, all, map[string]string{snapshotKey: string(meta)}); err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	return nil
}

// LoadSnapshot restores a snapshot into m and o and returns its Snapshot.
// Everything is checked before anything is written: on error the model and
// the optimizer are unchanged. A shard of a data-parallel snapshot
// (SaveShard's) is refused: LoadShard loads those.
func LoadSnapshot(path string, m nn.Module, o optim.Optimizer) (Snapshot, error) {
	fail := func(err error) (Snapshot, error) { return Snapshot{}, fmt.Errorf("resume from %s: %w", path, err) }
	f, snap, err := readSnapshot(path)
	if err != nil {
		return fail(err)
	}
	if l := snap.Shard; l != nil {
		return fail(fmt.Errorf("a shard of a data-parallel snapshot (%s), not a single-device one: resume it with --ranks %d --zero %d%s", l, l.Ranks, l.Zero, offloadFlag(l.Offload)))
	}
	if l := snap.Split; l != nil {
		return fail(fmt.Errorf("a rank's file of a split snapshot, not a single-device one: resume it with %s", l.Flags()))
	}
	model, err := nn.StateTensors(m, "")
	if err != nil {
		return fail(err)
	}
	var dev *device.Device
	for _, p := range m.Params() {
		dev = p.T.Device()
		break
	}
	if err := loadInto(f, snap, model, dev, o); err != nil {
		return fail(err)
	}
	return snap, nil
}

// readSnapshot reads and checks the safetensors file at path (its
// checksums included) and its Snapshot record.
func readSnapshot(path string) (*safetensors.File, Snapshot, error) {
	var snap Snapshot
	f, err := nn.ReadTensors(path)
	if err != nil {
		return nil, snap, err
	}
	raw, ok := f.Metadata[snapshotKey]
	if !ok {
		return nil, snap, fmt.Errorf("no %q metadata: not a snapshot written by SaveSnapshot", snapshotKey)
	}
	if err := json.Unmarshal([]byte(raw), &snap); err != nil {
		return nil, snap, fmt.Errorf("snapshot metadata: %w", err)
	}
	if snap.Step < 0 {
		return nil, snap, fmt.Errorf("snapshot metadata: step %d: want ≥ 0", snap.Step)
	}
	return f, snap, nil
}

// loadInto checks f's "model." tensors against model and its "optim."
// tensors against o, then loads o's state (through temporaries on dev)
// and the model's tensors; on error neither is changed.
func loadInto(f *safetensors.File, snap Snapshot, model map[string]*autograd.Tensor, dev *device.Device, o optim.Optimizer) error {
	if err := nn.CheckTensors(model, f, "model."); err != nil {
		return err
	}
	// The optimizer's tensors go through temporaries on dev: Load checks
	// them all before it copies anything.
	temps := map[string]*autograd.Tensor{}
	defer func() {
		for _, t := range temps {
			t.Release()
		}
	}()
	for name, ft := range f.Tensors {
		if strings.HasPrefix(name, "optim.") && !ft.DType.Valid() {
			return fmt.Errorf("optimizer tensor %q has dtype %s", name, ft.Kind)
		}
	}
	err := autograd.Try(func() { // New panics with a *device.OOMError when memory runs out
		for name, ft := range f.Tensors {
			if n, ok := strings.CutPrefix(name, "optim."); ok {
				temps[n] = autograd.New(dev, ft.DType, device.Workspace, ft.Shape...)
			}
		}
	})
	if err != nil {
		return err
	}
	if err := nn.AssignTensors(temps, f, "optim."); err != nil {
		return err
	}
	if err := o.Load(optim.State{Tensors: temps, Scalars: snap.Optim}); err != nil {
		return err
	}
	return nn.AssignTensors(model, f, "model.") // checked above: cannot fail
}

// ReadSnapshotInfo reads a snapshot's Snapshot record from the
// safetensors header alone (safetensors.ReadMetadata: the metadata's
// checksum is verified, the tensors are neither read nor checked as
// LoadSnapshot does): what Parse needs to compare --resume's flags.
func ReadSnapshotInfo(path string) (Snapshot, error) {
	var snap Snapshot
	md, err := safetensors.ReadMetadata(path)
	if err != nil {
		return snap, fmt.Errorf("%s: not a safetensors snapshot: %w", path, err)
	}
	raw, ok := md[snapshotKey]
	if !ok {
		return snap, fmt.Errorf("%s: no %q metadata: not a snapshot written by --save", path, snapshotKey)
	}
	if err := json.Unmarshal([]byte(raw), &snap); err != nil {
		return snap, fmt.Errorf("%s: snapshot metadata: %w", path, err)
	}
	if snap.Step < 0 {
		return snap, fmt.Errorf("%s: snapshot metadata: step %d: want ≥ 0", path, snap.Step)
	}
	return snap, nil
}
