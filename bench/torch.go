package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/headroom-ml/headroom/data"
	"github.com/headroom-ml/headroom/device"
)

// TorchRow is one row of scripts/bench_torch.py: the same model and
// technique trained by PyTorch on the CPU.
type TorchRow struct {
	Model          string  `json:"model"`
	Technique      string  `json:"technique"`
	Params         int64   `json:"params"`
	Batch          int     `json:"batch"`
	Steps          int     `json:"steps"`
	SecondsPerStep float64 `json:"seconds_per_step"`
	SamplesPerSec  float64 `json:"samples_per_sec"`
	FinalLoss      float64 `json:"final_loss"`
	// PeakBytes is 0 when the script could not measure it; PeakNote says
	// how it was measured or why not.
	PeakBytes int64  `json:"peak_bytes"`
	PeakNote  string `json:"peak_note"`
}

// TorchResult is the script's output.
type TorchResult struct {
	Torch   string     `json:"torch"`
	Threads int        `json:"threads"`
	Rows    []TorchRow `json:"rows"`
}

// FindPython returns the first of python3 on the PATH and /usr/bin/python3
// (where Debian's python3-torch installs) that imports torch, or "".
func FindPython() string {
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import torch").Run() == nil {
			return p
		}
	}
	return ""
}

// RunTorch runs the PyTorch script with python for c's models in c's
// mode, with the techniques both sides have: plain, amp bf16 and
// checkpoint √n.
func RunTorch(python, script string, c Config) (*TorchResult, error) {
	setups, err := c.setups()
	if err != nil {
		return nil, err
	}
	z := sizeOf(c.Mode)
	args := []string{script, "--techniques=plain,amp bf16,checkpoint √n",
		"--resnet-batch=" + strconv.Itoa(z.resnetBatch), "--gpt-batch=" + strconv.Itoa(z.gptBatch)}
	var models []string
	args = append(args, "--steps="+strconv.Itoa(max(setups[0].Steps, 2)))
	for _, s := range setups {
		models = append(models, s.Name)
		for _, a := range s.Args {
			if v, ok := strings.CutPrefix(a, "--data="); ok {
				args = append(args, "--corpus="+v)
			}
		}
	}
	args = append(args, "--models="+strings.Join(models, ","))
	if c.MNIST != "" {
		args = append(args, "--mnist="+c.MNIST)
	} else if dir, err := data.DefaultMNISTDir(); err == nil {
		args = append(args, "--mnist="+dir)
	}
	cmd := exec.Command(python, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("bench: %s %s: %w\n%s", python, filepath.Base(script), err, strings.TrimSpace(errb.String()))
	}
	var r TorchResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("bench: reading %s's output: %w", filepath.Base(script), err)
	}
	return &r, nil
}

// SideBySide renders headroom's rows and PyTorch's for the techniques both
// ran, as a Markdown table.
func SideBySide(r *Result, t *TorchResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "headroom and PyTorch %s (%d threads) on the CPU, same models, batches, optimizers and data\n\n", t.Torch, t.Threads)
	b.WriteString("| model | technique | peak headroom | peak torch | s/step headroom | s/step torch | loss headroom | loss torch |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|\n")
	var notes []string
	for _, tr := range t.Rows {
		var h *Row
		for i := range r.Rows {
			if r.Rows[i].Model == tr.Model && r.Rows[i].Technique == tr.Technique {
				h = &r.Rows[i]
			}
		}
		if h == nil {
			continue
		}
		tp := "–"
		if tr.PeakBytes > 0 {
			tp = device.FormatBytes(tr.PeakBytes)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.3f | %.3f | %.4f | %.4f |\n", tr.Model, tr.Technique,
			device.FormatBytes(h.Peak.Total), tp, h.SecondsPerStep, tr.SecondsPerStep, h.FinalLoss, tr.FinalLoss)
		if tr.PeakBytes == 0 && tr.PeakNote != "" {
			notes = append(notes, fmt.Sprintf("%s %s: torch's peak %s", tr.Model, tr.Technique, tr.PeakNote))
		}
	}
	if len(t.Rows) > 0 && t.Rows[0].PeakNote != "" && len(notes) == 0 {
		notes = append(notes, "torch's peak: "+t.Rows[0].PeakNote+"; headroom's: the allocator's exact requested bytes (peak_bytes.total)")
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "\n- %s", n)
	}
	b.WriteString("\n")
	return b.String()
}
