package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/plan"
	"github.com/headroom-ml/headroom/train"
)

// call runs the command line and returns its exit status and outputs.
func call(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// ok runs the command line and fails the test unless it succeeds.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := call(args...)
	if code != 0 {
		t.Fatalf("headroom %v: exit %d\n%s%s", args, code, out, errs)
	}
	return out
}

// TestPlanJSON: the fields of the contract are there and consistent with
// each other and with the planner.
func TestPlanJSON(t *testing.T) {
	out := ok(t, "plan", "--model", "transformer", "--batch", "4", "--seq", "16", "--ranks", "2", "--zero", "1", "--offload", "--json")
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, k := range []string{"model", "params", "peak_bytes", "ranks"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("no %q in %s", k, out)
		}
	}
	ranks := raw["ranks"].([]any)
	if len(ranks) != 2 {
		t.Fatalf("%d ranks, want 2", len(ranks))
	}
	fields := []string{"peak_bytes", "model_state_bytes", "parameter_bytes", "gradient_bytes", "optimizer_bytes", "activation_bytes",
		"workspace_bytes", "communication_bytes"}
	for i, r := range ranks {
		rm := r.(map[string]any)
		for _, k := range append([]string{"rank", "device", "host"}, fields...) {
			if _, ok := rm[k]; !ok {
				t.Errorf("rank %d has no %q", i, k)
			}
		}
		host := rm["host"].(map[string]any)
		for _, k := range fields {
			if _, ok := host[k]; !ok {
				t.Errorf("rank %d's host has no %q", i, k)
			}
		}
	}
	var p planJSON
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	want, err := plan.Predict(plan.Config{Model: "transformer", Batch: 4, Seq: 16, Ranks: 2, Zero: 1, Offload: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Model != "transformer" || p.Params != 834304 || p.Params != want.Params {
		t.Errorf("model %q, params %d; want transformer, 834304", p.Model, p.Params)
	}
	for i, r := range p.Ranks {
		w := want.Ranks[i]
		if r.Rank != i || r.Peak != w.Total || r.Parameter != w.Parameter || r.Optimizer != w.Optimizer || r.Activation != w.Activation ||
			r.ModelState != r.Parameter+r.Gradient+r.Optimizer || r.Peak > p.PeakBytes || r.Host == nil || r.Host.Optimizer != w.Host.Optimizer {
			t.Errorf("rank %d: %+v, planner %+v", i, r, w)
		}
	}
	// Offload: the optimizer state lives on the host, none on the device.
	if p.Ranks[0].Optimizer != 0 || p.Ranks[0].Host.Optimizer == 0 {
		t.Errorf("offload: device optimizer %d, host %d", p.Ranks[0].Optimizer, p.Ranks[0].Host.Optimizer)
	}
}

// TestPlanTable: equal ranks print on one line; a capacity says whether
// the step fits.
func TestPlanTable(t *testing.T) {
	out := ok(t, "plan", "--model", "transformer", "--batch", "8", "--seq", "16", "--ranks", "4", "--capacity", "64MiB")
	if !strings.Contains(out, "0–3 ") || strings.Count(out, "\n") > 10 || !strings.Contains(out, "fits in 64.00 MiB") {
		t.Errorf("table:\n%s", out)
	}
	out = ok(t, "plan", "--model", "transformer", "--batch", "8", "--capacity", "4MiB", "--json")
	var p planJSON
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if p.Fits == nil || *p.Fits || !strings.Contains(p.OOM, "out of memory") {
		t.Errorf("4 MiB: fits %v, oom %q", p.Fits, p.OOM)
	}
	t.Logf("\n%s", ok(t, "plan", "--model", "resnet50", "--amp", "bf16", "--autocast", "--checkpoint", "--batch", "64"))
}

// TestZeroPaper checks the ZeRO paper's Figure 1 (Rajbhandari et al.
// 2020): model states per rank of a 7.5B-parameter model with
// mixed-precision Adam over 64 ranks are 120 GB plain, 31.4 GB with stage
// 1, 16.6 GB with stage 2 and 1.9 GB with stage 3 — (2+2+K)Ψ, 4Ψ+KΨ/N,
// 2Ψ+(2+K)Ψ/N and (4+K)Ψ/N with K = 12. Planning 64 ranks takes seconds
// per stage, so the test plans 8, checks the measured bytes against those
// formulas, and evaluates them at 64.
func TestZeroPaper(t *testing.T) {
	const n = 8
	paper := []float64{120, 31.4, 16.6, 1.875}
	formula := func(z int, psi, n float64) float64 {
		switch z {
		case 1:
			return 4*psi + 12*psi/n
		case 2:
			return 2*psi + 14*psi/n
		case 3:
			return 16 * psi / n
		}
		return 16 * psi
	}
	for z := range 4 {
		code, out, errs := call("plan", "--model", "gpt-7.5b", "--ranks", "8", "--zero", string(rune('0'+z)), "--amp", "fp16", "--json")
		if code != 0 {
			t.Fatalf("zero %d: exit %d: %s", z, code, errs)
		}
		var p planJSON
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatal(err)
		}
		psi := float64(p.Params)
		if len(p.Ranks) != n {
			t.Fatalf("%d ranks", len(p.Ranks))
		}
		for _, r := range p.Ranks {
			if got, want := float64(r.ModelState), formula(z, psi, n); math.Abs(got/want-1) > 0.001 {
				t.Errorf("zero %d rank %d: model states %.0f bytes, formula %.0f", z, r.Rank, got, want)
			}
		}
		at64 := formula(z, psi, 64) / 1e9
		if math.Abs(at64/paper[z]-1) > 0.03 {
			t.Errorf("zero %d: %.3f GB per rank over 64 ranks, paper %.3f GB", z, at64, paper[z])
		}
		t.Logf("zero %d: %d ranks %.3f GB per rank (measured); 64 ranks %.3f GB (paper %.3f)", z, n, float64(p.Ranks[0].ModelState)/1e9, at64, paper[z])
	}
}

func TestFit(t *testing.T) {
	out := ok(t, "fit", "--model", "transformer", "--seq", "8", "--capacity", "16MiB", "--batch", "16", "--json")
	var r plan.FitResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Model != "transformer" || r.Capacity != 16<<20 || r.Target != 16 || len(r.Options) != len(plan.Techniques) || r.Best == nil {
		t.Fatalf("fit: %s", out)
	}
	// The recommendation runs for real under the capacity.
	c := plan.Config{Model: "transformer", Seq: 8, Batch: r.Best.MaxBatch, Capacity: 16 << 20}
	for _, tq := range plan.Techniques {
		if tq.Name == r.Best.Technique {
			tq.Apply(&c)
		}
	}
	m, err := plan.Measure(c)
	if err != nil || m.OOM != nil {
		t.Errorf("%s at batch %d in 16 MiB on cpu: %v %v", r.Best.Technique, r.Best.MaxBatch, err, m.OOM)
	}
	// …and one sample more does not fit.
	c.Batch++
	if m, err := plan.Measure(c); err != nil || m.OOM == nil {
		t.Errorf("%s at batch %d in 16 MiB on cpu: %v, out of memory %v; want out of memory", r.Best.Technique, c.Batch, err, m.OOM)
	}
	text := ok(t, "fit", "--model", "transformer", "--seq", "8", "--capacity", "3MiB", "--batch", "1000")
	if !strings.Contains(text, "no technique here fits batch 1000 in 3.00 MiB") {
		t.Errorf("fit table:\n%s", text)
	}
}

// TestUsageErrors: bad input exits with status 2 and a message naming it.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage"},
		{[]string{"train"}, `unknown command "train"`},
		{[]string{"plan", "--model", "resnet7"}, `"resnet7"`},
		{[]string{"plan"}, "--model is required"},
		{[]string{"plan", "--model", "gpt2", "--bogus"}, "-bogus"},
		{[]string{"plan", "--model", "gpt2", "--amp", "fp8"}, "--amp"},
		{[]string{"plan", "--model", "gpt2", "--zero", "5"}, "--zero 5"},
		{[]string{"plan", "--model", "gpt2", "--checkpoint=0"}, "--checkpoint"},
		{[]string{"plan", "--model", "gpt2", "--autocast"}, "--autocast"},
		{[]string{"plan", "--model", "gpt2", "--capacity", "lots"}, "--capacity"},
		{[]string{"plan", "--model", "gpt2", "--offload"}, "offload"},
		{[]string{"plan", "--model", "gpt2", "--batch", "3", "--ranks", "2"}, "batch 3"},
		{[]string{"plan", "--model", "gpt2", "extra"}, `"extra"`},
		{[]string{"fit", "--model", "gpt2"}, "--capacity"},
		{[]string{"fit", "--model", "gpt2", "--capacity", "80GiB", "--measure"}, "--measure"},
		{[]string{"bench", "--models", "vgg"}, `"vgg"`},
		{[]string{"bench", "--techniques", "int4"}, `"int4"`},
		{[]string{"bench", "--quick", "--tiny"}, "choose one"},
		{[]string{"summary"}, "FILE"},
		{[]string{"summary", "a", "b"}, "FILE"},
	} {
		code, out, errs := call(tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("headroom %q: exit %d, stderr %q, stdout %q; want 2 and a message with %q", tc.args, code, errs, out, tc.want)
		}
	}
	// A file of an unknown kind is a usage error too; a missing one is not.
	p := filepath.Join(t.TempDir(), "x.json")
	os.WriteFile(p, []byte(`{"hello": 1}`), 0o644)
	if code, _, errs := call("summary", p); code != 2 || !strings.Contains(errs, "neither") {
		t.Errorf("summary of an unknown JSON: exit %d, %q", code, errs)
	}
	if code, _, errs := call("summary", p+".missing"); code != 1 || !strings.Contains(errs, "no such file") {
		t.Errorf("summary of a missing file: exit %d, %q", code, errs)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"plan", "--help"}, {"fit", "-h"}, {"bench", "--help"}, {"summary", "--help"}} {
		code, out, errs := call(args...)
		if code != 0 || !strings.Contains(out, "usage: headroom") || errs != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	_, out, _ := call("plan", "--help")
	if !strings.Contains(out, "--autocast") || !strings.Contains(out, "ZeRO") {
		t.Errorf("plan --help does not explain --amp and --autocast:\n%s", out)
	}
}

// TestSummaryReport writes a run report with real statistics and reads
// it back.
func TestSummaryReport(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	w := dev.MustAlloc(3000, device.Label{Tag: device.Parameter, Op: "init"})
	a := dev.MustAlloc(5000, device.Label{Tag: device.Activation, Op: "conv2d"})
	a.Release()
	st := dev.Stats()
	w.Release()
	r := &train.Report{Example: "resnet", Model: "small", Params: 750, Steps: 3, FinalLoss: 2.25, Eval: 0.5, EvalMetric: "test_accuracy",
		SamplesPerSec: 100, Seconds: 1.5, PeakBytes: train.Peaks(st), Flags: map[string]string{"amp": "bf16", "accum": "1"}, Stats: st}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := r.Write(path); err != nil {
		t.Fatal(err)
	}
	out := ok(t, "summary", path)
	for _, want := range []string{"test accuracy 50.00%", "final loss 2.2500", "--amp=bf16", "Requested memory", "peak 7.81 KiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	var js reportSummary
	if err := json.Unmarshal([]byte(ok(t, "summary", path, "--json")), &js); err != nil {
		t.Fatal(err)
	}
	if js.Kind != "report" || js.PeakBytes.Total != 8000 || js.AtPeak["activation"] != 5000 || js.Techniques["amp"] != "bf16" || len(js.Techniques) != 1 {
		t.Errorf("summary --json: %+v", js)
	}
}

// TestSummaryRefusesImpossibleFiles: a report, a timeline and a bench.json
// holding a number no run writes are refused with an error (exit 1) that
// names the file, the field and the value, and nothing is summarized.
func TestSummaryRefusesImpossibleFiles(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ body, want string }{
		"report.json": {`{"example":"resnet","peak_bytes":{"total":0},"stats":{"ooms":-1}}`, "stats: ooms is -1, want ≥ 0"},
		"timeline.json": {`{"device":"cpu:0","events":[{"kind":"alloc","seq":0,"bytes":-5,"allocated":0,"reserved":0,"tag":"other"}]}`,
			"event 0 (alloc): bytes -5"},
		"bench.json": {`{"mode":"tiny","rows":[{"model":"resnet","technique":"plain","peak_bytes":{"total":-3}}]}`,
			"row 0 (resnet/plain): peak_bytes: total is -3, want ≥ 0"},
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := call("summary", p)
		if code != 1 || out != "" || !strings.Contains(errs, p) || !strings.Contains(errs, c.want) {
			t.Errorf("summary %s: exit %d, stdout %q, stderr %q; want 1, nothing, and an error naming the file and saying %q", name, code, out, errs, c.want)
		}
		t.Logf("%s", errs)
	}
}

// TestSummaryTimeline writes a timeline and summarizes and draws it.
func TestSummaryTimeline(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	dev.StartTimeline()
	w := dev.MustAlloc(4096, device.Label{Tag: device.Parameter, Op: "init"})
	x := dev.MustAlloc(10000, device.Label{Tag: device.Activation, Op: "matmul", Scope: "h.0.mlp", Phase: "forward"})
	x.Release()
	tl := dev.StopTimeline()
	w.Release()
	dir := t.TempDir()
	path := filepath.Join(dir, "t.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.WriteJSON(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	img := filepath.Join(dir, "t.png")
	out := ok(t, "summary", path, "--png", img)
	for _, want := range []string{"peak 13.77 KiB (14096 B)", "h.0.mlp/matmul", "traffic by tag", "activation", "wrote " + img} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	pf, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if _, err := png.Decode(pf); err != nil {
		t.Errorf("%s: %v", img, err)
	}
	// plan --timeline writes one that summary reads.
	planned := filepath.Join(dir, "plan.json")
	ok(t, "plan", "--model", "small", "--batch", "4", "--timeline", planned)
	if out := ok(t, "summary", planned); !strings.Contains(out, "timeline of meta:0") || !strings.Contains(out, "gradient") {
		t.Errorf("summary of plan --timeline:\n%s", out)
	}
	var js struct {
		PeakBytes int64 `json:"peak_bytes"`
		ByTag     []struct {
			Tag       string
			Allocated int64
		} `json:"by_tag"`
	}
	if err := json.Unmarshal([]byte(ok(t, "summary", "--json", path)), &js); err != nil || js.PeakBytes != 14096 || len(js.ByTag) != 2 {
		t.Errorf("summary --json: %+v, %v", js, err)
	}
}

// TestBenchTiny runs the smallest bench through the command.
func TestBenchTiny(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := call("bench", "--tiny", "--models", "resnet", "--techniques", "plain,checkpoint √n", "--steps", "1", "--out", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Mode string
		Rows []struct {
			Technique string
			PeakBytes struct{ Total int64 } `json:"peak_bytes"`
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Mode != "tiny" || len(res.Rows) != 2 || res.Rows[1].Technique != "checkpoint √n" {
		t.Fatalf("%+v %v\n%s", res, err, out)
	}
	for _, f := range []string{"bench.json", "bench.md", "memory_resnet.png", "peak_resnet.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if s := ok(t, "summary", filepath.Join(dir, "bench.json")); !strings.Contains(s, "| checkpoint √n |") {
		t.Errorf("summary of bench.json:\n%s", s)
	}
}
