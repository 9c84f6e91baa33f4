package bench

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	examples "github.com/headroom-ml/headroom/examples/resnet/run"
	trun "github.com/headroom-ml/headroom/examples/transformer/run"
	"github.com/headroom-ml/headroom/plan"
	"github.com/headroom-ml/headroom/train"
)

// TestTinyBench runs three techniques on both models in Tiny mode and
// checks the rows, the JSON, the Markdown and the charts.
func TestTinyBench(t *testing.T) {
	techs, err := Select([]string{"accum 4", "ranks 2 + zero 1"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(Config{Mode: Tiny, Techniques: techs})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths, err := res.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%.1f s\n%s", res.Seconds, res.Markdown())

	// A row for every model and technique asked, plain first.
	want := []string{"plain", "accum 4", "ranks 2 + zero 1"}
	b, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadResult(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != 2*len(want) {
		t.Fatalf("bench.json has %d rows, want %d", len(got.Rows), 2*len(want))
	}
	if k := got.Kernels; k != "go" && k != "avx2" && k != "avx512" && k != "avx512+vnni" &&
		k != "avx512+bf16" && k != "avx512+vnni+bf16" &&
		k != "avx512+bf16+amx" && k != "avx512+vnni+bf16+amx" {
		t.Errorf("bench.json's kernels = %q, want the cpu device's path", k)
	}
	rows := map[string]Row{}
	for i, r := range got.Rows {
		model := []string{"resnet", "transformer"}[i/len(want)]
		if r.Model != model || r.Technique != want[i%len(want)] {
			t.Errorf("row %d is %s/%s, want %s/%s", i, r.Model, r.Technique, model, want[i%len(want)])
		}
		if r.Peak.Total <= 0 || r.SecondsPerStep <= 0 || r.TrainSteps != 2 || !(r.FinalLoss > 0) {
			t.Errorf("%s/%s: peak %d, %g s/step, %d training steps, loss %g", r.Model, r.Technique, r.Peak.Total, r.SecondsPerStep, r.TrainSteps, r.FinalLoss)
		}
		// Two measurements of the same step: the planner's on zeros and
		// the example's training on MNIST or Go source.
		if !r.SamePeak || r.TrainPeak != r.Peak {
			t.Errorf("%s/%s: the training run's peaks %+v differ from the measured step's %+v", r.Model, r.Technique, r.TrainPeak, r.Peak)
		}
		if sum := r.AtPeak.Parameter + r.AtPeak.Gradient + r.AtPeak.Optimizer + r.AtPeak.Activation + r.AtPeak.Workspace +
			r.AtPeak.Communication + r.AtPeak.Other; sum != r.Peak.Total {
			t.Errorf("%s/%s: the tags at the peak add up to %d, want the peak %d", r.Model, r.Technique, sum, r.Peak.Total)
		}
		rows[r.Model+"/"+r.Technique] = r
	}
	for _, m := range []string{"resnet", "transformer"} {
		plain, acc, z1 := rows[m+"/plain"], rows[m+"/accum 4"], rows[m+"/ranks 2 + zero 1"]
		for k, v := range plain.VsPlain {
			if v != 1 {
				t.Errorf("%s plain: vs_plain[%s] = %g, want 1", m, k, v)
			}
		}
		// ZeRO 1 over 2 ranks halves the optimizer state (up to the
		// padding of the flat shard).
		if r := z1.VsPlain["peak_optimizer"]; r < 0.5 || r > 0.505 {
			t.Errorf("%s ZeRO 1: optimizer %d bytes, plain %d: ratio %.4f, want 0.5", m, z1.Peak.Optimizer, plain.Peak.Optimizer, r)
		}
		if z1.Peak.Parameter != plain.Peak.Parameter {
			t.Errorf("%s ZeRO 1: parameters %d bytes, want plain's %d", m, z1.Peak.Parameter, plain.Peak.Parameter)
		}
		// Micro-batches of 1 instead of 4 hold fewer activations.
		if acc.Peak.Activation >= plain.Peak.Activation {
			t.Errorf("%s accumulate 4: activations %d bytes, plain %d: want fewer", m, acc.Peak.Activation, plain.Peak.Activation)
		}
	}
	// Adam's state is 8 bytes per f32 parameter (834,304 of them).
	if tr := rows["transformer/plain"]; tr.Peak.Optimizer != 8*834304 {
		t.Errorf("transformer optimizer peak %d, want 8 × 834,304", tr.Peak.Optimizer)
	}
	if e := rows["resnet/plain"].Eval; e < 0 || e > 1 || rows["resnet/plain"].EvalMetric != "test_accuracy" {
		t.Errorf("resnet eval %g (%s), want an accuracy", e, rows["resnet/plain"].EvalMetric)
	}

	md, err := os.ReadFile(filepath.Join(dir, "bench.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tq := range want {
		if n := strings.Count(string(md), "| "+tq+" |"); n != 2 {
			t.Errorf("bench.md has %d rows for %q, want 2", n, tq)
		}
	}
	var pngs int
	for _, p := range paths {
		if strings.HasSuffix(p, ".png") {
			pngs++
			checkPNG(t, p)
		}
	}
	if pngs != 4 {
		t.Errorf("%d PNG files, want 4: %v", pngs, paths)
	}
}

// checkPNG decodes a PNG and checks that it is a picture: a sensible size
// and more than a few colours.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	colours := map[[4]uint32]bool{}
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y += 2 {
		for x := bd.Min.X; x < bd.Max.X; x += 2 {
			r, g, b, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, b, a}] = true
		}
	}
	if bd.Dx() < 400 || bd.Dy() < 200 || len(colours) < 5 || st.Size() > 200<<10 {
		t.Errorf("%s: %d×%d pixels, %d colours, %d bytes", path, bd.Dx(), bd.Dy(), len(colours), st.Size())
	}
	t.Logf("%s: %d×%d, %d colours, %d bytes", filepath.Base(path), bd.Dx(), bd.Dy(), len(colours), st.Size())
}

// TestFlagsParse: the example programs accept the flags of every
// technique, and they say what the configuration says.
func TestFlagsParse(t *testing.T) {
	for _, tq := range Techniques() {
		c := plan.Config{Model: "small", Batch: 8}
		if tq.GPT {
			c.Model = "transformer" // Flags adds the GPT's --clip=0 to --step-in-backward
		}
		tq.Apply(&c, &Row{})
		args := append([]string{"--steps=1"}, Flags(c)...)
		ec, err := exampleFlags(tq.GPT, args)
		if err != nil {
			t.Errorf("%s: %v: %v", tq.Name, args, err)
			continue
		}
		ac, _ := ec.AMPDType()
		mesh := max(c.TP, 1) * max(c.PP, 1) // the example's --ranks counts the whole mesh
		if ec.TP != max(c.TP, 1) || ec.PP != max(c.PP, 1) || ec.Ranks != max(c.Ranks, 1)*mesh && !(mesh > 1 && c.Ranks <= 1 && ec.Ranks == 1) {
			t.Errorf("%s: flags %v parse as tp %d pp %d ranks %d, want the configuration's tp %d pp %d × dp %d", tq.Name, args, ec.TP, ec.PP, ec.Ranks, c.TP, c.PP, c.Ranks)
		}
		if ec.Batch != 8 || ec.Accum != max(c.Accum, 1) || ec.Zero != c.Zero || ec.Offload != c.Offload ||
			ac != c.AMP || ec.AMPParams != c.AMPParams || (ec.Checkpoint != "") != (c.Checkpoint != 0) ||
			(ec.CheckpointBudget != "") != (c.CheckpointBudget != 0) || ec.Selective != c.Selective ||
			ec.OffloadActivations != c.OffloadActivations || (ec.ActivationBudget != "") != (c.ActivationBudget != 0) {
			t.Errorf("%s: flags %v parse as %+v, want the configuration %+v", tq.Name, args, *ec, c)
		}
		if ec.StepInBackward != c.StepInBackward {
			t.Errorf("%s: flags %v parse as step in backward %v, want %v", tq.Name, args, ec.StepInBackward, c.StepInBackward)
		}
		if !tq.GPT {
			continue
		}
		gc, err := trun.Parse(args, &bytes.Buffer{})
		wantOpt := "adamw"
		if c.Optimizer != "" {
			wantOpt = c.Optimizer
		}
		if err != nil || gc.LoRA != c.LoRA || c.LoRABase != "" && gc.LoRABase != c.LoRABase || gc.Optimizer != wantOpt {
			t.Errorf("%s: flags %v parse as lora %d base %q, optimizer %q (%v); want %d %q %q", tq.Name, args,
				gc.LoRA, gc.LoRABase, gc.Optimizer, err, c.LoRA, c.LoRABase, wantOpt)
		}
	}
}

// exampleFlags parses args as the transformer example (gpt) or the
// resnet example does, returning the common flags.
func exampleFlags(gpt bool, args []string) (*train.Common, error) {
	if gpt {
		ec, err := trun.Parse(args, &bytes.Buffer{})
		if err != nil {
			return nil, err
		}
		return &ec.Common, nil
	}
	ec, err := examples.Parse(args, &bytes.Buffer{})
	if err != nil {
		return nil, err
	}
	return &ec.Common, nil
}

func TestSelect(t *testing.T) {
	ts, err := Select([]string{"checkpoint √n", "plain"})
	if err != nil || len(ts) != 2 || ts[0].Name != "checkpoint √n" || ts[1].Name != "plain" {
		t.Errorf("Select = %v, %v", ts, err)
	}
	if _, err := Select([]string{"int4"}); err == nil || !strings.Contains(err.Error(), `"int4"`) {
		t.Errorf("Select(int4): error %v, want one naming it", err)
	}
	if _, err := Run(Config{Models: []string{"vgg"}}); err == nil || !strings.Contains(err.Error(), `"vgg"`) {
		t.Errorf("Run(vgg): error %v, want one naming it", err)
	}
}

// TestRunHook: a technique with its own Run (the hook for INT8
// inference) gets its row, compared with plain.
func TestRunHook(t *testing.T) {
	hook := Technique{Name: "int8 inference", Run: func(s Setup, plain *Row) (*Row, error) {
		return &Row{Batch: s.Plan.Batch, Peak: plain.Peak, Note: "from the hook"}, nil
	}}
	res, err := Run(Config{Mode: Tiny, Models: []string{"resnet"}, Steps: -1, Techniques: []Technique{hook}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || res.Rows[1].Technique != "int8 inference" || res.Rows[1].VsPlain["peak_total"] != 1 || res.Rows[1].Note != "from the hook" {
		t.Errorf("rows %+v", res.Rows)
	}
}

// TestSummarize checks a timeline's summary against a hand-made history:
// parameter 1000 B, activation 300 B retagged to workspace, 500 B of
// activation allocated and freed.
func TestSummarize(t *testing.T) {
	dev := meta.New(0, device.Options{})
	dev.StartTimeline()
	p := dev.MustAlloc(1000, device.Label{Tag: device.Parameter, Op: "init"})
	a := dev.MustAlloc(300, device.Label{Tag: device.Activation, Op: "relu", Phase: "forward"})
	a.Retag(device.Workspace)
	c := dev.MustAlloc(500, device.Label{Tag: device.Activation, Op: "matmul", Scope: "fc", Phase: "forward"})
	c.Release()
	a.Release()
	tl := dev.StopTimeline()
	p.Release()
	s := Summarize(tl, 1)
	if s.PeakBytes != 1800 || tl.Events[s.PeakEvent].Op != "matmul" || len(s.Around) != 3 {
		t.Errorf("peak %d at event %d (%+v), %d events around; want 1800 at matmul's alloc, 3", s.PeakBytes, s.PeakEvent, tl.Events[s.PeakEvent], len(s.Around))
	}
	want := map[string]TagTotal{
		"parameter":  {Tag: "parameter", Allocated: 1000, Allocs: 1},
		"activation": {Tag: "activation", Allocated: 800, Freed: 800, Allocs: 2, Frees: 2},
		"workspace":  {Tag: "workspace", Allocated: 300, Freed: 300, Allocs: 1, Frees: 1},
	}
	if len(s.ByTag) != len(want) {
		t.Errorf("by tag %+v, want %+v", s.ByTag, want)
	}
	for _, tt := range s.ByTag {
		if tt != want[tt.Tag] {
			t.Errorf("tag %s: %+v, want %+v", tt.Tag, tt, want[tt.Tag])
		}
	}
	text := s.String()
	if !strings.Contains(text, "peak 1.76 KiB (1800 B)") || !strings.Contains(text, "fc/matmul") {
		t.Errorf("summary text:\n%s", text)
	}
	out := filepath.Join(t.TempDir(), "t.png")
	if err := TimelinePNG(tl, out, true); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, out)
	if err := TimelinePNG(&device.Timeline{Device: "x"}, out, false); err == nil {
		t.Error("TimelinePNG of an empty timeline: no error")
	}
}

func trainPeak(total int64) train.PeakBytes { return train.PeakBytes{Total: total} }

// TestRoundTicks: axes are labelled at 4 to 10 round values (1, 2 or 5
// times a power of ten) covering the range, not at two.
func TestRoundTicks(t *testing.T) {
	for _, r := range [][2]float64{{0, 25.7}, {0, 3.3}, {0, 163}, {0, 0.7}, {12, 19}, {0, 4344}} {
		ts := roundTicks{10}.Ticks(r[0], r[1])
		step := ts[1].Value - ts[0].Value
		mant := step / math.Pow(10, math.Floor(math.Log10(step)+1e-9))
		if len(ts) < 4 || len(ts) > 10 || ts[0].Value < r[0] || ts[len(ts)-1].Value > r[1] || ts[0].Value-r[0] >= step || r[1]-ts[len(ts)-1].Value >= step ||
			(math.Abs(mant-1) > 1e-9 && math.Abs(mant-2) > 1e-9 && math.Abs(mant-5) > 1e-9) {
			t.Errorf("ticks of [%g, %g]: %v", r[0], r[1], ts)
		}
		for _, tk := range ts {
			if tk.Label == "" {
				t.Errorf("ticks of [%g, %g]: %v has an unlabelled tick", r[0], r[1], ts)
			}
		}
	}
}
