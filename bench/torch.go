package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/headroom-ml/headroom/data"
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
	// Warmup steps ran untimed before the StepSeconds; SecondsPerStep is
	// their median. Speed rows (SpeedModels) have no loss.
	Warmup      int       `json:"warmup"`
	StepSeconds []float64 `json:"step_seconds"`
	Speed       bool      `json:"speed"`
	// RoundSeconds are the rounds' medians (MergeRounds), as
	// SpeedRow's.
	RoundSeconds []float64 `json:"round_seconds,omitempty"`
}

// TorchEnv is the PyTorch process's environment as the script reports
// it (--probe prints it alone).
type TorchEnv struct {
	Torch  string `json:"torch"`
	OneDNN string `json:"onednn"`
	// BuildBLAS is torch's build-time BLAS_INFO; BLASPaths the BLAS-like
	// libraries the process mapped after a matmul, resolved (ClassifyBLAS
	// tells which BLAS they are).
	BuildBLAS string   `json:"build_blas"`
	BLASPaths []string `json:"blas_paths"`
	// OpenBLASCore is OpenBLAS's kernel core (OPENBLAS_CORETYPE or its
	// detection: Haswell is AVX2, SkylakeX and Cooperlake AVX-512) and
	// OpenBLASThreads its threads ("", 0: not OpenBLAS).
	OpenBLASCore    string `json:"openblas_core"`
	OpenBLASThreads int    `json:"openblas_threads"`
	// ATenCapability is the vector width of ATen's own kernels ("AVX2",
	// "AVX512"; ATEN_CPU_CAPABILITY caps it) and OneDNNISA the instruction
	// set oneDNN's convolutions ran ("Intel AVX2"; ONEDNN_MAX_CPU_ISA caps
	// it), "" where the script could not tell.
	ATenCapability string `json:"aten_capability"`
	OneDNNISA      string `json:"onednn_isa"`
	Threads        int    `json:"threads"`
	InteropThreads int    `json:"interop_threads"`
}

// TorchResult is the script's output.
type TorchResult struct {
	TorchEnv
	Rows []TorchRow `json:"rows"`
	// Skipped are the runs PyTorch could not do (oneDNN has no bfloat16
	// convolution below AVX-512): no row, a note in SideBySide.
	Skipped []TorchSkip `json:"skipped"`
}

// TorchSkip is a run the script skipped and why.
type TorchSkip struct {
	Model     string `json:"model"`
	Technique string `json:"technique"`
	Reason    string `json:"reason"`
}

// BLAS is the BLAS the PyTorch process loaded.
func (e TorchEnv) BLAS() BLAS { return ClassifyBLAS(e.BLASPaths) }

// Check refuses an environment a comparison at threads threads would be
// unfair in: the reference BLAS (*ReferenceBLASError), or other thread
// counts than threads.
func (e TorchEnv) Check(threads int) error {
	if b := e.BLAS(); b.Reference {
		return &ReferenceBLASError{BLAS: b}
	}
	if e.Threads != threads || e.InteropThreads != threads {
		return fmt.Errorf("bench: --torch: PyTorch runs %d intra-op and %d inter-op threads, headroom %d: want the same", e.Threads, e.InteropThreads, threads)
	}
	return nil
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

// ProbeTorch runs the script's --probe at c's thread count and ISA:
// PyTorch's versions, BLAS, kernel paths and threads, in seconds, before
// any work.
func ProbeTorch(python, script string, c Config) (*TorchEnv, error) {
	var e TorchEnv
	if err := runScript(python, script, c, []string{"--probe", "--threads=" + strconv.Itoa(c.threads())}, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// RunTorch runs the PyTorch script with python for c's models in c's
// mode, with the techniques both sides have that c wants (Config.wants):
// plain, amp bf16 and checkpoint √n (the speed models: plain and amp
// bf16), at c's threads,
// warm-up and timed steps, in the environment of c's ISA.
func RunTorch(python, script string, c Config) (*TorchResult, error) {
	setups, err := c.setups()
	if err != nil {
		return nil, err
	}
	z := sizeOf(c.Mode)
	warmup, timed := c.timing()
	args := []string{"--techniques=" + c.torchTechniques(),
		"--resnet-batch=" + strconv.Itoa(z.resnetBatch), "--gpt-batch=" + strconv.Itoa(z.gptBatch),
		"--threads=" + strconv.Itoa(c.threads()), "--warmup=" + strconv.Itoa(warmup), "--timed=" + strconv.Itoa(timed)}
	models := append([]string{}, c.Speed...)
	if len(setups) > 0 {
		args = append(args, "--steps="+strconv.Itoa(max(setups[0].Steps, 2)))
	}
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
	var r TorchResult
	if err := runScript(python, script, c, args, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// runScript runs python script args in the environment of c's ISA
// (TorchISAEnv) and decodes its JSON output into v.
func runScript(python, script string, c Config, args []string, v any) error {
	cmd := exec.Command(python, append([]string{script}, args...)...)
	cmd.Env = TorchISAEnv(c.ISA, os.Environ())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("bench: %s %s: %w\n%s", python, filepath.Base(script), err, strings.TrimSpace(errb.String()))
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		return fmt.Errorf("bench: reading %s's output: %w", filepath.Base(script), err)
	}
	return nil
}
