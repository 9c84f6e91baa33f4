package bench

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
)

// committedResult reads the bench.json the docs show, a real run with
// PyTorch beside it.
func committedResult(tb testing.TB) *Result {
	tb.Helper()
	b, err := os.ReadFile("../docs/bench/bench.json")
	if err != nil {
		tb.Fatal(err)
	}
	r, err := ReadResult(bytes.NewReader(b))
	if err != nil {
		tb.Fatalf("docs/bench/bench.json: %v", err)
	}
	if r.Torch == nil && len(r.Rows) > 0 {
		// The committed file was made where PyTorch was not installed: a
		// PyTorch row of the first technique stands in, so that the
		// readers' torch checks are exercised too.
		row := r.Rows[0]
		r.Torch = &TorchResult{TorchEnv: TorchEnv{Torch: "fixture", Threads: 2, InteropThreads: 2}, Rows: []TorchRow{{Model: row.Model, Technique: row.Technique,
			Batch: row.Batch, Steps: row.TrainSteps, SecondsPerStep: 0.1, SamplesPerSec: 10, FinalLoss: 2}}}
	}
	return r
}

func resultJSON(tb testing.TB, r *Result) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// ReadResult reads a real bench.json and refuses numbers no bench run
// writes, naming the row, the field and the value.
func TestReadResultRefuses(t *testing.T) {
	good := committedResult(t)
	if len(good.Rows) < 2 || good.Torch == nil {
		t.Fatalf("docs/bench/bench.json has %d rows and torch %v", len(good.Rows), good.Torch)
	}
	for _, c := range []struct {
		edit func(r *Result)
		want string
	}{
		{func(r *Result) { r.Seconds = -1 }, "seconds is -1, want ≥ 0"},
		{func(r *Result) { r.Rows[1].Peak.Activation = -4096 }, "row 1 (resnet/" + good.Rows[1].Technique + "): peak_bytes: activation is -4096"},
		{func(r *Result) { r.Rows[0].Peak.Workspace = r.Rows[0].Peak.Total + 1 }, "row 0 (resnet/plain): peak_bytes: workspace is"},
		{func(r *Result) { r.Rows[0].AtPeak.Gradient++ }, "at_peak: the tags hold 17204093 bytes together, not the total 17204092"},
		{func(r *Result) { r.Rows[0].TrainPeak.Total = -1 }, "train_peak_bytes: total is -1, want ≥ 0"},
		{func(r *Result) { r.Rows[0].SkippedSteps = r.Rows[0].TrainSteps + 1 }, "skipped_steps 9 is above train_steps 8"},
		{func(r *Result) { r.Rows[0].SecondsPerStep = -0.5 }, "seconds_per_step is -0.5"},
		{func(r *Result) { r.Rows[0].VsPlain["peak_total"] = -1 }, "vs_plain.peak_total is -1"},
		{func(r *Result) { r.Torch.Rows[0].PeakBytes = -1 }, "torch row 0 (resnet/plain): peak_bytes is -1"},
	} {
		r := committedResult(t)
		c.edit(r)
		_, err := ReadResult(bytes.NewReader(resultJSON(t, r)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
			continue
		}
		t.Logf("%v", err)
	}
}

// FuzzReadResult reads arbitrary JSON as a bench.json: ReadResult never
// panics, and what it accepts renders as Markdown and reads back the same
// after writing.
func FuzzReadResult(f *testing.F) {
	one := committedResult(f)
	one.Rows, one.Torch.Rows = one.Rows[:1], one.Torch.Rows[:1]
	f.Add(resultJSON(f, one))
	f.Add([]byte(`{"mode":"tiny","rows":[{"model":"m","technique":"plain","peak_bytes":{"total":-1}}]}`))
	f.Add([]byte(`{"mode":"tiny","rows":[{"model":"m","at_peak":{"total":5,"other":4}}]}`))
	f.Add([]byte(`{"mode":"tiny","rows":[],"torch":{"rows":[{"peak_bytes":1}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ReadResult(bytes.NewReader(b))
		if err != nil {
			return
		}
		_ = r.Markdown()
		again, err := ReadResult(bytes.NewReader(resultJSON(t, r)))
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("the accepted result does not read back the same: %v", err)
		}
	})
}
