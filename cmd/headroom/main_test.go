package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
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
		for _, k := range append([]string{"rank", "device", "host", "at_peak"}, fields...) {
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
	// What each tag held at the peak adds up to the peak.
	for _, r := range p.Ranks {
		a := r.AtPeak
		if sum := a.Parameter + a.Gradient + a.Optimizer + a.Activation + a.Workspace + a.Communication + a.Other; sum != r.Peak || a.Peak != r.Peak {
			t.Errorf("rank %d: at the peak %+v adds up to %d, want the peak %d", r.Rank, a, sum, r.Peak)
		}
	}
	// Offload: the optimizer state lives on the host, none on the device.
	if p.Ranks[0].Optimizer != 0 || p.Ranks[0].Host.Optimizer == 0 {
		t.Errorf("offload: device optimizer %d, host %d", p.Ranks[0].Optimizer, p.Ranks[0].Host.Optimizer)
	}
}

// TestPlanTable: equal ranks print on one line; the at-peak columns add
// up to the printed peak, the own peaks are labelled as such and may
// not; a capacity says whether the step fits.
// TestPlanSplit plans GPT-3 175B over 16 pipeline stages and the
// transformer model over 2 tensor-parallel ranks: every rank is there
// with its layout, holds 4 bytes of f32 parameter and 8 of AdamW state
// per parameter it holds, and the stages' parameters add up to the
// (untied) model's.
func TestPlanSplit(t *testing.T) {
	for _, args := range [][]string{
		{"--model", "gpt3-175b", "--pp", "16", "--accum", "16"},
		{"--model", "transformer", "--tp", "2", "--sequence-parallel", "--batch", "4", "--seq", "16"},
	} {
		var p planJSON
		if err := json.Unmarshal([]byte(ok(t, append(append([]string{"plan"}, args...), "--json")...)), &p); err != nil {
			t.Fatal(err)
		}
		var held int64
		for i, r := range p.Ranks {
			held += r.Params
			if r.Parameter != 4*r.Params || r.Optimizer != 8*r.Params || r.Layout == "" {
				t.Errorf("%v rank %d (%s): %d parameters in %d B, optimizer %d B: want 4 and 8 B each", args, i, r.Layout, r.Params, r.Parameter, r.Optimizer)
			}
		}
		if args[2] == "--pp" && (held != p.Params || len(p.Ranks) != 16) {
			t.Errorf("%v: %d ranks hold %d parameters, the model has %d", args, len(p.Ranks), held, p.Params)
		}
		t.Logf("%v: %d ranks, rank 0 %s: %d parameters, peak %d B", args, len(p.Ranks), p.Ranks[0].Layout, p.Ranks[0].Params, p.Ranks[0].Peak)
	}
}

func TestPlanTable(t *testing.T) {
	out := ok(t, "plan", "--model", "transformer", "--batch", "8", "--seq", "16", "--ranks", "4", "--capacity", "64MiB")
	if !strings.Contains(out, "0–3 ") || strings.Count(out, "\n") > 14 || !strings.Contains(out, "fits in 64.00 MiB") {
		t.Errorf("table:\n%s", out)
	}
	// The small ResNet's own activation and workspace peaks add up to
	// more than the total peak: only the at-peak columns may add up.
	out = ok(t, "plan", "--model", "small")
	at, own := strings.Index(out, "memory at the peak"), strings.Index(out, "own peak")
	if at < 0 || own < at {
		t.Fatalf("plan table without the at-peak and own-peak tables:\n%s", out)
	}
	atRows, ownRows := tableRows(out[at:own]), tableRows(out[own:])
	checkSums(t, "plan --model small, at the peak", atRows, 1, 2, 8)
	peak, _ := printed(atRows[0][1])
	act, _ := printed(ownRows[0][5])
	ws, _ := printed(ownRows[0][6])
	if act+ws <= peak {
		t.Errorf("the own activation and workspace peaks %.0f + %.0f fit in the peak %.0f: this test wants a case where they do not:\n%s", act, ws, peak, out)
	}
	t.Logf("\n%s", out)
	out = ok(t, "plan", "--model", "transformer", "--batch", "8", "--capacity", "4MiB", "--json")
	var p planJSON
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if p.Fits == nil || *p.Fits || !strings.Contains(p.OOM, "out of memory") {
		t.Errorf("4 MiB: fits %v, oom %q", p.Fits, p.OOM)
	}
	t.Logf("\n%s", ok(t, "plan", "--model", "resnet50", "--amp", "bf16", "--checkpoint", "--batch", "64"))
}

// TestZeroPaper pins the ZeRO paper's Figure 1 (Rajbhandari et al.
// 2020) as the README's command gives it: model states per rank of the
// 7.5B-parameter GPT with mixed-precision Adam (K = 12) over N = 64
// ranks are, for stages 0 to 3, (2+2+K)Ψ, 2Ψ+2Ψ+KΨ/N, 2Ψ+(2+K)Ψ/N and
// (2+2+K)Ψ/N bytes, with Ψ/N the elements of one rank's shard; the paper
// rounds them to 120, 31.4, 16.6 and 1.9 GB.
func TestZeroPaper(t *testing.T) {
	const n, k = 64, 12
	// Ψ in closed form (nn.GPT's memory formula, biases, tied head):
	// V·C + T·C + L·(12C² + 13C) + 2C.
	v, ctx, l, c := int64(50257), int64(1024), int64(36), int64(4096)
	psi := v*c + ctx*c + l*(12*c*c+13*c) + 2*c
	// A rank's shard is Σ_k ⌈u_k/N⌉ over the buckets' u_k elements (the
	// layout pads each bucket to a multiple of N). Every parameter of
	// this GPT holds a multiple of C elements (V·C, T·C, C, 3C² + 3C…)
	// and C is a multiple of N, so every bucket is too: no padding.
	if c%n != 0 {
		t.Fatalf("width %d is not a multiple of %d ranks: the shard has padding", c, n)
	}
	shard := psi / n
	want := [4]struct{ param, grad, opt int64 }{
		{2 * psi, 2 * psi, k * psi}, {2 * psi, 2 * psi, k * shard}, {2 * psi, 2 * shard, k * shard}, {2 * shard, 2 * shard, k * shard},
	}
	paper := []float64{120, 31.4, 16.6, 1.875}
	for z, w := range want {
		t.Run(fmt.Sprintf("zero%d", z), func(t *testing.T) {
			t.Parallel() // each stage plans 64 ranks for a few seconds
			code, out, errs := call("plan", "--model", "gpt-7.5b", "--ranks", "64", "--zero", fmt.Sprint(z), "--amp", "fp16", "--amp-params", "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var p planJSON
			if err := json.Unmarshal([]byte(out), &p); err != nil {
				t.Fatal(err)
			}
			if p.Params != psi || len(p.Ranks) != n {
				t.Fatalf("%d parameters over %d ranks, want Ψ = %d over %d", p.Params, len(p.Ranks), psi, n)
			}
			for _, r := range p.Ranks {
				if r.Parameter != w.param || r.Gradient != w.grad || r.Optimizer != w.opt || r.ModelState != w.param+w.grad+w.opt {
					t.Errorf("rank %d: model states %d = %d + %d + %d bytes, want %d = %d + %d + %d", r.Rank,
						r.ModelState, r.Parameter, r.Gradient, r.Optimizer, w.param+w.grad+w.opt, w.param, w.grad, w.opt)
				}
			}
			gb := float64(w.param+w.grad+w.opt) / 1e9
			if math.Abs(gb/paper[z]-1) > 0.01 {
				t.Errorf("%.3f GB per rank, the paper %.3f GB", gb, paper[z])
			}
			t.Logf("ZeRO-%d: %d B = %.3f GB of model states per rank (paper %.3f GB); peak %.2f GB", z, p.Ranks[0].ModelState, gb, paper[z], float64(p.PeakBytes)/1e9)
		})
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

// TestUsageErrors: bad input exits with status 64 and a message naming
// it, before any work.
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
		{[]string{"plan", "--model", "gpt2", "--attention", "flash"}, `--attention "flash": want fused or materialized`},
		{[]string{"plan", "--model", "gpt2", "--dropout", "1"}, "dropout 1: want 0 ≤ dropout < 1"},
		{[]string{"plan", "--model", "small", "--dropout", "0.1"}, "dropout 0.1, materialized attention false for small: both describe a GPT"},
		{[]string{"plan", "--model", "gpt2", "--attention", "materialized", "--tp", "2"}, "materialized attention with tp 2, pp 1: not available yet"},
		{[]string{"plan", "--model", "gpt2", "--checkpoint=0"}, "--checkpoint"},
		{[]string{"plan", "--model", "gpt2", "--amp-params"}, "--amp-params needs --amp"},
		{[]string{"plan", "--model", "gpt2", "--autocast"}, "-autocast"},
		{[]string{"plan", "--model", "gpt2", "--accum", "0"}, "--accum 0"},
		{[]string{"plan", "--model", "small", "--prune", "1.5"}, "--prune 1.5"},
		{[]string{"plan", "--model", "small", "--prune", "0.3", "--ranks", "2", "--zero", "3"}, "prune with ZeRO stage 3: pruning ranks each block's units by the magnitudes of the whole model's weights, which a ZeRO-3 rank never holds"},
		{[]string{"plan", "--model", "gpt2", "--capacity", "lots"}, "--capacity"},
		{[]string{"plan", "--model", "gpt2", "--offload"}, "offload"},
		{[]string{"plan", "--model", "gpt2", "--batch", "3", "--ranks", "2"}, "batch 3"},
		{[]string{"plan", "--model", "gpt2", "--batch", "100000000000000"}, "--batch 100000000000000"},
		{[]string{"plan", "--model", "resnet18", "--image", "3000000000"}, "--image 3000000000"},
		{[]string{"plan", "--model", "gpt2", "--batch", "99999999999999999999"}, "-batch"},
		{[]string{"plan", "--model", "gpt2", "extra"}, `"extra"`},
		{[]string{"plan", "--model", "gpt2", "--tp", "0"}, "--tp 0, --pp 1: want each ≥ 1"},
		{[]string{"plan", "--model", "gpt2", "--tp", "5"}, "tp 5 for gpt2: its 12 heads must divide by tp"},
		{[]string{"plan", "--model", "gpt2", "--pp", "13"}, "pp 13 for gpt2: more stages than its 12 layers"},
		{[]string{"plan", "--model", "gpt2", "--tp", "2", "--pp", "2", "--checkpoint-budget", "1GiB"}, "a checkpoint budget or selective recomputation with pp 2 or dp 1: not available yet"},
		{[]string{"plan", "--model", "gpt2", "--tp", "2", "--dp", "2", "--zero", "3"}, "ZeRO stage 3 with tp 2, pp 1 over dp 2: want stage 1 or 2 over dp ≥ 2 (stage 3 is not available yet)"},
		{[]string{"plan", "--model", "gpt2", "--dp", "2", "--ranks", "4"}, "--dp 2 and --ranks 4"},
		{[]string{"plan", "--model", "gpt2", "--tp", "2", "--zero", "1"}, "ZeRO stage 1 with tp 2, pp 1 over dp 1: want stage 1 or 2 over dp ≥ 2"},
		{[]string{"plan", "--model", "small", "--tp", "2"}, "want a GPT model"},
		{[]string{"plan", "--model", "gpt2", "--sequence-parallel"}, "sequence parallelism needs tp ≥ 2"},
		{[]string{"plan", "--model", "gpt2", "--pp", "2", "--pipe-schedule", "zigzag"}, `pipeline schedule "zigzag": want 1f1b or gpipe`},
		{[]string{"fit", "--model", "gpt2"}, "--capacity"},
		{[]string{"fit", "--model", "gpt2", "--capacity", "80GiB", "--measure"}, "--measure"},
		{[]string{"bench", "--models", "vgg"}, `"vgg"`},
		{[]string{"bench", "--techniques", "int4"}, `"int4"`},
		{[]string{"bench", "--quick", "--tiny"}, "choose one"},
		{[]string{"summary"}, "FILE"},
		{[]string{"summary", "a", "b"}, "FILE"},
		{[]string{"export", "a"}, "want SNAPSHOT and OUT"},
	} {
		code, out, errs := call(tc.args...)
		if code != train.ExitUsage || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("headroom %q: exit %d, stderr %q, stdout %q; want %d and a message with %q", tc.args, code, errs, out, train.ExitUsage, tc.want)
		}
	}
	// A file of an unknown kind is a usage error too; a missing one is not.
	p := filepath.Join(t.TempDir(), "x.json")
	os.WriteFile(p, []byte(`{"hello": 1}`), 0o644)
	if code, _, errs := call("summary", p); code != train.ExitUsage || !strings.Contains(errs, "neither") {
		t.Errorf("summary of an unknown JSON: exit %d, %q", code, errs)
	}
	if code, _, errs := call("summary", p+".missing"); code != train.ExitError || !strings.Contains(errs, "no such file") {
		t.Errorf("summary of a missing file: exit %d, %q", code, errs)
	}
}

// TestStatus: the exit statuses of COMMON.md: an out-of-memory failure
// (wrapped or not) is 3, bad usage 64, anything else 1; plan predicting
// an out-of-memory is an answer, 0.
func TestStatus(t *testing.T) {
	oom := &device.OOMError{Device: "cpu:0", Requested: 1 << 20}
	for _, tc := range []struct {
		err  error
		want int
	}{{oom, 3}, {fmt.Errorf("bench: training run: %w", oom), 3}, {train.Usagef("--x"), 64}, {errors.New("disk full"), 1}} {
		if got := train.ExitCode(io.Discard, "headroom", tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	if code, out, _ := call("plan", "--model", "transformer", "--batch", "8", "--capacity", "4MiB"); code != 0 || !strings.Contains(out, "does not fit") {
		t.Errorf("plan predicting an out-of-memory: exit %d\n%s", code, out)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"plan", "--help"}, {"fit", "-h"}, {"bench", "--help"}, {"summary", "--help"}, {"export", "--help"}} {
		code, out, errs := call(args...)
		if code != 0 || !strings.Contains(out, "usage: headroom") || errs != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	_, out, _ := call("plan", "--help")
	if !strings.Contains(out, "--amp-params") || !strings.Contains(out, "autocast") || !strings.Contains(out, "ZeRO") {
		t.Errorf("plan --help does not explain --amp and --amp-params:\n%s", out)
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
	// bench.md's tag columns, what each tag held at the peak, add up to
	// the peak: cells 3 (parameter) … 9 (other) to cell 1.
	md, err := os.ReadFile(filepath.Join(dir, "bench.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := tableRows(string(md))
	if len(rows) != 2 {
		t.Errorf("bench.md has %d rows, want 2:\n%s", len(rows), md)
	}
	checkSums(t, "bench.md", rows, 1, 3, 9)
	if s := ok(t, "summary", filepath.Join(dir, "bench.json")); !strings.Contains(s, "| checkpoint √n |") {
		t.Errorf("summary of bench.json:\n%s", s)
	}
}
