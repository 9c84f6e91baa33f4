package run

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// splitState is what a split rank draws from besides its model: the
// batch sampler's source and the dropout generator. Each rank's file of
// a split snapshot (train.SplitGPT.Save) stores its own.
type splitState struct {
	src *rand.PCG
	gen *autograd.Generator
}

// resumeSplit restores --resume's split snapshot into the rank's part g
// and its state st, and returns the step to start from and the loss of
// the step it was saved after (0, 0 without --resume), saying so on w
// (of steps steps).
func (c *Config) resumeSplit(g *train.SplitGPT, m *parallel.Mesh, st splitState, w io.Writer, steps int) (int, float64, error) {
	if c.Resume == "" {
		return 0, 0, nil
	}
	snap, err := g.Load(c.Resume, m)
	if err != nil {
		return 0, 0, err
	}
	var ex extra
	if err := json.Unmarshal(snap.Extra, &ex); err != nil {
		return 0, 0, fmt.Errorf("resume from %s: %w", c.Resume, err)
	}
	if err := st.src.UnmarshalBinary(ex.RNG); err != nil {
		return 0, 0, fmt.Errorf("resume from %s: sampler state: %w", c.Resume, err)
	}
	if s, ok := snap.Generators["dropout"]; ok {
		st.gen.SetState(s)
	}
	fmt.Fprintf(w, "resumed from step %d of %d (%s)\n", snap.Step, steps, c.Resume)
	return snap.Step, snap.Loss, nil
}

// saveSplit writes the rank's file of --save's split snapshot after the
// run's last step (of --stop-after's, say), with loss the rank's last
// step's loss.
func (c *Config) saveSplit(g *train.SplitGPT, m *parallel.Mesh, st splitState, loss float64) error {
	if c.Save == "" {
		return nil
	}
	rs, err := st.src.MarshalBinary()
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", c.Save, err)
	}
	snap := train.Snapshot{Program: "transformer", Config: c.Config(), Loss: loss,
		Generators: map[string]autograd.GeneratorState{"dropout": st.gen.State()}}
	if snap.Extra, err = json.Marshal(extra{RNG: rs}); err != nil {
		return fmt.Errorf("snapshot %s: %w", c.Save, err)
	}
	return g.Save(c.Save, m, snap)
}
