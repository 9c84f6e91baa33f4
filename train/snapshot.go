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
}

const snapshotKey = "headroom.snapshot"

// SaveSnapshot writes the model's parameters and buffers ("model.<name>"),
// the optimizer's state tensors ("optim.<name>") and snap (with the
// optimizer's scalars) to one safetensors file, atomically: a failure
// leaves an existing file as it was.
func SaveSnapshot(path string, m nn.Module, o optim.Optimizer, snap Snapshot) error {
	ts, err := nn.StateTensors(m, "model.")
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	st := o.State()
	for n, t := range st.Tensors {
		ts["optim."+n] = t
	}
	snap.Optim = st.Scalars
	meta, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	if err := nn.WriteTensors(path, ts, map[string]string{snapshotKey: string(meta)}); err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	return nil
}

// LoadSnapshot restores a snapshot into m and o and returns its Snapshot.
// Everything is checked before anything is written: on error the model and
// the optimizer are unchanged.
func LoadSnapshot(path string, m nn.Module, o optim.Optimizer) (Snapshot, error) {
	var snap Snapshot
	fail := func(err error) (Snapshot, error) { return Snapshot{}, fmt.Errorf("resume from %s: %w", path, err) }
	f, err := nn.ReadTensors(path)
	if err != nil {
		return fail(err)
	}
	raw, ok := f.Metadata[snapshotKey]
	if !ok {
		return fail(fmt.Errorf("no %q metadata: not a snapshot written by SaveSnapshot", snapshotKey))
	}
	if err := json.Unmarshal([]byte(raw), &snap); err != nil {
		return fail(fmt.Errorf("snapshot metadata: %w", err))
	}
	if snap.Step < 0 {
		return fail(fmt.Errorf("snapshot metadata: step %d: want ≥ 0", snap.Step))
	}
	model, err := nn.StateTensors(m, "")
	if err != nil {
		return fail(err)
	}
	if err := nn.CheckTensors(model, f, "model."); err != nil {
		return fail(err)
	}
	var dev *device.Device
	for _, p := range m.Params() {
		dev = p.T.Device()
		break
	}
	// The optimizer's tensors go through temporaries on the model's device:
	// Load checks them all before it copies anything.
	temps := map[string]*autograd.Tensor{}
	defer func() {
		for _, t := range temps {
			t.Release()
		}
	}()
	for name, ft := range f.Tensors {
		if strings.HasPrefix(name, "optim.") && !ft.DType.Valid() {
			return fail(fmt.Errorf("optimizer tensor %q has dtype %s", name, ft.Kind))
		}
	}
	err = autograd.Try(func() { // New panics with a *device.OOMError when memory runs out
		for name, ft := range f.Tensors {
			if n, ok := strings.CutPrefix(name, "optim."); ok {
				temps[n] = autograd.New(dev, ft.DType, device.Workspace, ft.Shape...)
			}
		}
	})
	if err != nil {
		return fail(err)
	}
	if err := nn.AssignTensors(temps, f, "optim."); err != nil {
		return fail(err)
	}
	if err := o.Load(optim.State{Tensors: temps, Scalars: snap.Optim}); err != nil {
		return fail(err)
	}
	if err := nn.AssignTensors(model, f, "model."); err != nil {
		return fail(err) // unreachable: checked above
	}
	return snap, nil
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
