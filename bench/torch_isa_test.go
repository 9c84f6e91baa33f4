package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// onednnTwice imports scripts/bench_torch.py and prints its environment's
// onednn_isa twice, the way main reads it before and after the steps.
const onednnTwice = `import sys
sys.argv = ["bench_torch.py"]
import bench_torch as b
for _ in range(2):
    print(b.environment(2)["onednn_isa"])
`

// TestTorchOneDNNISATwice: the oneDNN ISA the script reports after the
// steps (its second reading) is the one it read first, in each ISA's
// environment — oneDNN prints its verbose header once per process, so a
// second reading from scratch came back empty and the table printed "–".
// Needs a python3 that imports torch; without one there is no script to test.
func TestTorchOneDNNISATwice(t *testing.T) {
	python := FindPython()
	if python == "" {
		t.Skip("no python3 imports torch")
	}
	dir, err := filepath.Abs("../scripts")
	if err != nil {
		t.Fatal(err)
	}
	for _, isa := range []string{"", "avx2"} {
		cmd := exec.Command(python, "-c", onednnTwice)
		cmd.Env = append(TorchISAEnv(isa, os.Environ()), "PYTHONPATH="+dir)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("isa %q: %v", isa, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 2 || lines[0] == "" || lines[0] != lines[1] {
			t.Fatalf("isa %q: oneDNN ISA read twice = %q, want the same non-empty answer", isa, lines)
		}
		if isa == "avx2" && !strings.Contains(lines[0], "AVX2") {
			t.Errorf("isa avx2: oneDNN ISA %q, want AVX2", lines[0])
		}
	}
}

// TestSideBySideSkipped: a run PyTorch skipped has no row and is named
// under the table with its reason; the row it did run stays.
func TestSideBySideSkipped(t *testing.T) {
	res := &Result{Threads: 2, Speed: []SpeedRow{
		{Model: "resnet18", Technique: "plain", Params: 11173962, SecondsPerStep: 0.5},
		{Model: "resnet18", Technique: "amp bf16", Params: 11173962, SecondsPerStep: 0.6}}}
	tr := torchFixture(openblasAlt, openblasLib)
	tr.Rows[2].Technique = "plain" // the fixture's resnet18 speed row
	tr.Skipped = []TorchSkip{{Model: "resnet18", Technique: "amp bf16", Reason: "oneDNN Intel AVX2 has no primitive for it"}}
	s := SideBySide(res, tr)
	if !strings.Contains(s, "| resnet18 | plain |") || strings.Contains(s, "| resnet18 | amp bf16 |") ||
		!strings.Contains(s, "- resnet18 amp bf16: no PyTorch row, oneDNN Intel AVX2 has no primitive for it") {
		t.Errorf("side by side with a skipped run:\n%s", s)
	}
}
