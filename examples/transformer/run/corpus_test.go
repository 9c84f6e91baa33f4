package run_test

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/train/traintest"
)

// TestCorpusSlice: a corpus whose first half repeats one line and whose
// second half is uniformly random bytes. Trained on --corpus-slice 0:0.5
// the model learns the line (validation loss far below a byte's ln 256);
// on 0.5:1 no model can beat ln 256 ≈ 5.545 nats on random bytes, so the
// validation loss stays near it — each run reads its slice alone. The
// report's corpus_bytes is the slice's ⌊hi·n⌋ − ⌊lo·n⌋.
func TestCorpusSlice(t *testing.T) {
	dir := t.TempDir()
	const half = 48 << 10
	line := []byte("func main() { fmt.Println(\"hello\") }\n")
	text := make([]byte, 0, 2*half)
	for len(text) < half {
		text = append(text, line[:min(len(line), half-len(text))]...)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for len(text) < 2*half {
		text = append(text, byte(rng.IntN(256)))
	}
	file := filepath.Join(dir, "c.txt")
	if err := os.WriteFile(file, text, 0o644); err != nil {
		t.Fatal(err)
	}
	loss := map[string]float64{}
	for _, s := range []string{"0:0.5", "0.5:1"} {
		path := filepath.Join(dir, strings.ReplaceAll(s, ":", "_")+".json")
		mainOK(t, "--data", file, "--corpus-slice", s, "--steps", "100", "--lr", "1e-2", "--val-fraction", "0.2", "--eval-batches", "8", "--report", path)
		r := traintest.ReadReport(t, path)
		loss[s] = r["eval"].(float64)
		if got := r["extra"].(map[string]any)["corpus_bytes"].(float64); got != half {
			t.Errorf("--corpus-slice %s: corpus_bytes %v, want %d", s, got, half)
		}
	}
	if loss["0:0.5"] > 1.5 {
		t.Errorf("validation loss %.4f on the repeated line: the run did not train on it alone", loss["0:0.5"])
	}
	if uniform := math.Log(256); loss["0.5:1"] < uniform-0.1 {
		t.Errorf("validation loss %.4f on random bytes, below ln 256 = %.4f: the run saw more than its slice", loss["0.5:1"], uniform)
	}
	t.Logf("validation loss: line %.4f, random %.4f", loss["0:0.5"], loss["0.5:1"])
}
