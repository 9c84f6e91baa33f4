package train

import (
	"fmt"

	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/safetensors"
)

// LoadModel loads the model file path — every parameter and buffer by
// name, as nn.Save writes it — into m before training (--init), and
// returns the bytes of tensor data it read. On one device (d nil) and
// under ZeRO stages 0–2, where every rank holds the whole model, it reads
// the whole file and verifies its checksums (nn.Load); under stage 3 it
// reads only the rank's ranges of every parameter and every buffer whole
// (parallel.DDP.LoadShardFrom), so that no rank reads or holds the whole
// model; the checksums, each of a whole tensor, cannot be verified then.
// Every tensor's name, shape and dtype are checked before anything is
// written. Call it before making the optimizer: its master weights are
// copied from the parameters when it is made.
func LoadModel(path string, m nn.Module, d *parallel.DDP) (int64, error) {
	if d == nil || d.Zero() < 3 {
		if _, err := nn.Load(path, m); err != nil {
			return 0, fmt.Errorf("--init %s: %w", path, err)
		}
		var n int64
		for _, p := range m.Params() {
			n += p.T.Bytes()
		}
		return n, nil
	}
	r, err := safetensors.OpenRanges(path)
	if err != nil {
		return 0, fmt.Errorf("--init %s: %w", path, err)
	}
	defer r.Close()
	if err := d.LoadShardFrom(r); err != nil {
		return 0, fmt.Errorf("--init %s: %w", path, err)
	}
	return r.Read, nil
}
