package parallel

import "github.com/headroom-ml/headroom/safetensors"

// SetStageBytes sets the staging bound of the in-process group (see
// StageBytes) for a test and returns the function that puts it back.
func SetStageBytes(n int) (restore func()) {
	old := stageBytes
	stageBytes = n
	return func() { stageBytes = old }
}

// LoadShardFrom is LoadShard from a file the test opened (to count what
// it reads).
func (d *DDP) LoadShardFrom(r *safetensors.Ranges) error { return d.loadShard(r) }
