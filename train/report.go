package train

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
)

// Report is the JSON record of a run (--report FILE): what was trained,
// how it ended and, from the allocator, exactly how much memory each kind
// of tensor took at its peak.
type Report struct {
	Example string `json:"example"`
	Model   string `json:"model"`
	Params  int64  `json:"params"`
	Steps   int    `json:"steps"`
	// FinalLoss is the training loss of the last step.
	FinalLoss float64 `json:"final_loss"`
	// Eval is the final evaluation: test accuracy (a fraction) for image
	// classifiers, validation loss (nats per token) for language models;
	// EvalMetric names it.
	Eval          float64 `json:"eval"`
	EvalMetric    string  `json:"eval_metric"`
	SamplesPerSec float64 `json:"samples_per_sec"`
	Seconds       float64 `json:"seconds"`
	// PeakBytes is each tag's own peak and the total's (exact bytes).
	PeakBytes     PeakBytes         `json:"peak_bytes"`
	CapacityBytes int64             `json:"capacity_bytes"`
	Flags         map[string]string `json:"flags"`
	// Extra holds example-specific results (samples generated, …).
	Extra map[string]any `json:"extra,omitempty"`
	Stats device.Stats   `json:"stats"`
	// Kernels is the cpu device's instruction-set path
	// (cpu.KernelPath: go, avx2, avx512 or avx512+vnni); Write fills it
	// in when it is empty, so speeds are read for what ran.
	Kernels string `json:"kernels"`
}

// PeakBytes is the peak of exact requested bytes per tag, and of all tags
// together (Total, which is not the sum: tags peak at different times).
type PeakBytes struct {
	Total         int64 `json:"total"`
	Parameter     int64 `json:"parameter"`
	Gradient      int64 `json:"gradient"`
	Optimizer     int64 `json:"optimizer"`
	Activation    int64 `json:"activation"`
	Workspace     int64 `json:"workspace"`
	Communication int64 `json:"communication"`
	Other         int64 `json:"other"`
}

// Peaks reads PeakBytes from a device's statistics.
func Peaks(st device.Stats) PeakBytes {
	p := func(t device.Tag) int64 { return st.ByTag[t].Peak }
	return PeakBytes{
		Total: st.Requested.Peak, Parameter: p(device.Parameter), Gradient: p(device.Gradient),
		Optimizer: p(device.Optimizer), Activation: p(device.Activation), Workspace: p(device.Workspace),
		Communication: p(device.Communication), Other: p(device.Other),
	}
}

// Write writes the report as indented JSON, atomically (temporary file and
// rename), filling in Kernels first when it is empty.
func (r *Report) Write(path string) error {
	if r.Kernels == "" {
		r.Kernels = cpu.KernelPath()
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return WriteFileAtomic(path, append(b, '\n'))
}

// WriteFileAtomic writes data to path through a temporary file in the same
// folder that is synced and renamed over path: readers see the old file or
// the new one, never a part.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
