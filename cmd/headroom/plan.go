package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/plan"
	"github.com/headroom-ml/headroom/train"
)

const planSynopsis = `plan --model NAME [--batch B] [--seq S] [--image N] [--amp fp16|bf16] [--amp-params [--grad-f32]]
       [--checkpoint[=N]] [--checkpoint-budget SIZE] [--accum K] [--ranks N --zero 0|1|2|3] [--offload]
       [--prune FRACTION] [--optimizer adamw|adam|sgd] [--capacity SIZE] [--timeline FILE] [--json]
       [--device cpu|cuda [--cuda-major 9]] [--tp T [--sequence-parallel] | --pp P [--pipe-schedule 1f1b|gpipe]] [--dp D]

Runs the model's real training step on meta devices (which allocate exactly
what cpu devices do and compute nothing) and prints every rank's memory by
tag: what each tag held at the moment of the peak (adding up to the peak),
then each tag's own peak. The flags mean what they mean in the examples:
--amp is autocast (f32 parameters, the forward in 16 bits); --amp-params
adds 16-bit parameters and gradients with f32 master weights and
optimizer state, mixed precision as the ZeRO paper counts it; --grad-f32
keeps those gradients in f32 (Megatron-LM's main_grad: 6 + 12/D bytes per
parameter with --zero 1 over D ranks). --device cuda
plans for a GPU: its meta devices first allocate what a cuda device holds
from the start, cuBLAS's workspace (32 MiB from compute capability 9 on,
4 MiB before: --cuda-major, default 9, H100/H200), so the plan is the GPU's
exact accounting. No GPU is needed to plan for one. --tp and --pp split a
GPT over T tensor-parallel ranks or P pipeline stages, as the transformer
example does, and every rank's bytes are planned, its communication
buffers included; --dp is --ranks (the data-parallel copies of the split
model, ZeRO over each data-parallel group).`

// bytesJSON is one device's peak bytes by tag.
type bytesJSON struct {
	Peak          int64 `json:"peak_bytes"`
	ModelState    int64 `json:"model_state_bytes"`
	Parameter     int64 `json:"parameter_bytes"`
	Gradient      int64 `json:"gradient_bytes"`
	Optimizer     int64 `json:"optimizer_bytes"`
	Activation    int64 `json:"activation_bytes"`
	Workspace     int64 `json:"workspace_bytes"`
	Communication int64 `json:"communication_bytes"`
	Other         int64 `json:"other_bytes"`
}

func bytesOf(p train.PeakBytes) bytesJSON {
	return bytesJSON{Peak: p.Total, ModelState: p.Parameter + p.Gradient + p.Optimizer, Parameter: p.Parameter,
		Gradient: p.Gradient, Optimizer: p.Optimizer, Activation: p.Activation, Workspace: p.Workspace,
		Communication: p.Communication, Other: p.Other}
}

// rankJSON is one rank's prediction: each tag's own peak, and what each
// tag held at the moment of the peak (AtPeak: its fields add up to its
// peak_bytes).
type rankJSON struct {
	Rank   int    `json:"rank"`
	Device string `json:"device"`
	// Layout is the rank's part of a split model ("tp 1/2", "stage 3/16")
	// and Params the parameters it holds.
	Layout string `json:"layout,omitempty"`
	Params int64  `json:"params"`
	bytesJSON
	AtPeak bytesJSON `json:"at_peak"`
	// Host is the offload host's memory (the same fields, its own peaks):
	// --offload's and --offload-activations'.
	Host *bytesJSON `json:"host,omitempty"`
}

// planJSON is the output of plan --json.
type planJSON struct {
	Model  string `json:"model"`
	Params int64  `json:"params"`
	Batch  int    `json:"batch"`
	Seq    int    `json:"seq,omitempty"`
	Image  int    `json:"image,omitempty"`
	// Device is the kind planned for (cpu or cuda); CUDAMajor the
	// compute capability major of a cuda plan and Resident what its
	// devices hold from the start (cuBLAS's workspace).
	Device        string `json:"device"`
	CUDAMajor     int    `json:"cuda_major,omitempty"`
	ResidentBytes int64  `json:"resident_bytes,omitempty"`
	// Techniques echoes the configuration.
	Techniques map[string]any `json:"techniques"`
	// PeakBytes is the largest rank's peak.
	PeakBytes int64 `json:"peak_bytes"`
	// AllocatedPeak is the largest rank's peak in allocator blocks
	// (requests rounded up): what a capacity must hold.
	AllocatedPeak int64      `json:"allocated_peak_bytes"`
	Capacity      int64      `json:"capacity_bytes,omitempty"`
	Fits          *bool      `json:"fits,omitempty"`
	OOM           string     `json:"oom,omitempty"`
	Ranks         []rankJSON `json:"ranks"`
	// Timeline is --timeline's file (absolute), for headroom view.
	Timeline string `json:"timeline,omitempty"`
	// ActivationBudget is --activation-budget's decision table.
	ActivationBudget *plan.ActivationPlan `json:"activation_budget,omitempty"`
}

func cmdPlan(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plan")
	var m modelFlags
	m.register(fs, true)
	timeline := fs.String("timeline", "", "write rank 0's memory timeline of the last step to this JSON file (for headroom summary)")
	pos, err := parse(fs, planSynopsis, normalize(args), stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return stray(args, pos)
	}
	c, err := m.config()
	if err != nil {
		return err
	}
	c.Timeline = *timeline != ""
	p, err := plan.Predict(c)
	if err != nil {
		return err
	}
	if p.Timeline != nil {
		if err := writeTimeline(*timeline, p.Timeline); err != nil {
			return err
		}
	}
	out := toJSON(p, c)
	if *timeline != "" {
		if out.Timeline, err = filepath.Abs(*timeline); err != nil {
			out.Timeline = *timeline
		}
	}
	out.ActivationBudget = p.ActivationBudget
	if m.json {
		return writeJSON(stdout, out)
	}
	fmt.Fprint(stdout, planTable(out))
	if p.ActivationBudget != nil {
		fmt.Fprint(stdout, p.ActivationBudget.Table())
	}
	return nil
}

// toJSON converts a prediction to the plan command's JSON.
func toJSON(p *plan.Prediction, c plan.Config) planJSON {
	out := planJSON{Model: p.Model, Params: p.Params, Batch: p.Batch, Seq: p.Seq, Image: p.Image, Capacity: c.Capacity,
		Device: p.Config.Device, CUDAMajor: p.Config.CUDAMajor, ResidentBytes: p.Config.Resident(), Techniques: techniques(p.Config)}
	for i, r := range p.Ranks {
		rj := rankJSON{Rank: i, Device: r.Device, Layout: r.Layout, Params: r.Params, bytesJSON: bytesOf(r.PeakBytes), AtPeak: bytesOf(r.AtPeak)}
		if r.Host != nil {
			h := bytesOf(*r.Host)
			rj.Host = &h
		}
		out.PeakBytes = max(out.PeakBytes, r.Total)
		out.AllocatedPeak = max(out.AllocatedPeak, r.AllocatedPeak)
		out.Ranks = append(out.Ranks, rj)
	}
	if c.Capacity > 0 {
		fits := p.OOM == nil && out.PeakBytes <= c.Capacity
		out.Fits = &fits
	}
	if p.OOM != nil {
		out.OOM = p.OOM.Error()
	}
	return out
}

// techniques describes a resolved configuration.
func techniques(c plan.Config) map[string]any {
	t := map[string]any{"optimizer": c.Optimizer, "accum": c.Accum, "ranks": c.Ranks, "zero": c.Zero, "offload": c.Offload}
	if c.AMP != dtype.Invalid {
		t["amp"], t["amp_params"] = c.AMP.String(), c.AMPParams
	}
	if c.GradF32 {
		t["grad_f32"] = true
	}
	if c.Prune > 0 {
		t["prune"] = c.Prune
	}
	if c.Checkpoint < 0 {
		t["checkpoint"] = "sqrt"
	} else if c.Checkpoint > 0 {
		t["checkpoint"] = c.Checkpoint
	}
	if c.CheckpointBudget > 0 {
		t["checkpoint_budget"] = c.CheckpointBudget
	}
	if c.Selective {
		t["selective"] = true
	}
	if c.FusedLoss {
		t["fused_loss"] = true
	}
	if c.StepInBackward {
		t["step_in_backward"] = true
	}
	if c.OffloadActivations {
		t["offload_activations"] = true
	}
	if c.ActivationBudget > 0 {
		t["activation_budget"] = c.ActivationBudget
	}
	if c.TP > 1 {
		t["tp"], t["sequence_parallel"] = c.TP, c.Sequence
	}
	if c.PP > 1 {
		t["pp"], t["pipe_schedule"] = c.PP, c.Schedule
	}
	loraTechniques(c, t)
	return t
}

// planTable renders a prediction: a heading, what each tag held at the
// peak, then each tag's own peak (with the offload host's), each a line
// per group of consecutive ranks with the same bytes.
func planTable(p planJSON) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s parameters, batch %d", p.Model, commas(p.Params), p.Batch)
	if p.Seq > 0 {
		fmt.Fprintf(&b, " × %d tokens", p.Seq)
	}
	if p.Image > 0 {
		fmt.Fprintf(&b, " of %d×%d images", p.Image, p.Image)
	}
	t := p.Techniques
	fmt.Fprintf(&b, "; %s", t["optimizer"])
	if v, ok := t["amp"]; ok && t["amp_params"] == true && t["grad_f32"] == true {
		fmt.Fprintf(&b, ", %s parameters with f32 gradients and f32 master weights", v)
	} else if ok && t["amp_params"] == true {
		fmt.Fprintf(&b, ", %s parameters and gradients with f32 master weights", v)
	} else if ok {
		fmt.Fprintf(&b, ", %s autocast", v)
	}
	if v, ok := t["prune"]; ok {
		fmt.Fprintf(&b, ", pruned by %g", v)
	}
	if v, ok := t["lora"]; ok {
		fmt.Fprintf(&b, ", LoRA r=%v on %v (%v base)", v, t["lora_targets"], t["lora_base"])
	}
	if v, ok := t["checkpoint"]; ok {
		if v == "sqrt" {
			v = "⌈√n⌉"
		}
		fmt.Fprintf(&b, ", checkpoint %v segments", v)
	}
	if v, ok := t["checkpoint_budget"]; ok {
		fmt.Fprintf(&b, ", checkpoint budget %s", device.FormatBytes(v.(int64)))
	}
	if a := t["accum"].(int); a > 1 {
		fmt.Fprintf(&b, ", %d micro-batches", a)
	}
	if len(p.Ranks) > 1 || t["zero"].(int) > 0 {
		fmt.Fprintf(&b, "; %d ranks, ZeRO stage %d", len(p.Ranks), t["zero"])
	}
	if t["offload"].(bool) {
		b.WriteString(", offload")
	}
	b.WriteString(splitLine(p))
	b.WriteString("\n")
	b.WriteString(deviceLine(p))
	b.WriteString("\n")
	b.WriteString("memory at the peak (what each tag held when the total peaked: the columns add up to the peak)\n")
	rankRows(&b, p.Ranks, "peak", func(r rankJSON) (bytesJSON, *bytesJSON) { return r.AtPeak, nil })
	b.WriteString("\neach tag's own peak (its largest, reached at another moment than the total's: these need not add up)\n")
	rankRows(&b, p.Ranks, "model states", func(r rankJSON) (bytesJSON, *bytesJSON) { return r.bytesJSON, r.Host })
	r := p.Ranks[0]
	fmt.Fprintf(&b, "\nmodel states of rank 0: %s = parameters %s + gradients %s + optimizer %s; peak %s\n",
		both(r.ModelState), both(r.Parameter), both(r.Gradient), both(r.Optimizer), both(p.PeakBytes))
	if r.Params > 0 {
		per := func(n int64) float64 { return float64(n) / float64(r.Params) }
		fmt.Fprintf(&b, "model states per parameter rank 0 trains (%s): %.4f B = %.4f + %.4f + %.4f\n", commas(r.Params),
			per(r.ModelState), per(r.Parameter), per(r.Gradient), per(r.Optimizer))
	}
	if p.Fits != nil {
		if *p.Fits {
			fmt.Fprintf(&b, "fits in %s: peak %s requested, %s in allocator blocks, %s to spare\n", device.FormatBytes(p.Capacity),
				device.FormatBytes(p.PeakBytes), device.FormatBytes(p.AllocatedPeak), device.FormatBytes(p.Capacity-p.AllocatedPeak))
		} else {
			fmt.Fprintf(&b, "does not fit in %s\n", device.FormatBytes(p.Capacity))
			if p.OOM != "" {
				fmt.Fprintf(&b, "%s\n", p.OOM)
			}
		}
	}
	return b.String()
}

// splitLine says how a split model is laid out over the ranks ("" when
// it is not): the tensor-parallel degree, or the stages and the
// parameters each rank holds.
func splitLine(p planJSON) string {
	t := p.Techniques
	var parts []string
	if t["tp"] != nil {
		parts = append(parts, fmt.Sprintf("tensor parallel %d", t["tp"]))
		if t["sequence_parallel"] == true {
			parts = append(parts, "sequence parallel")
		}
	}
	if t["pp"] != nil {
		parts = append(parts, fmt.Sprintf("pipeline %d stages, %s", t["pp"], t["pipe_schedule"]))
	}
	if len(parts) == 0 {
		return ""
	}
	s := " (" + strings.Join(parts, ", ")
	var held []string
	rankRuns(len(p.Ranks), func(i, j int) bool { return p.Ranks[i].Params == p.Ranks[j].Params }, func(name string, i int) {
		held = append(held, commas(p.Ranks[i].Params)+" ("+name+")")
	})
	return s + "; parameters per rank " + strings.Join(held, ", ") + ")"
}

// rankRuns calls f for each run of consecutive ranks that same says hold
// what the run's first rank i holds, with the run's name ("3" or "0–63").
func rankRuns(n int, same func(i, j int) bool, f func(name string, i int)) {
	for i := 0; i < n; {
		j := i + 1
		for j < n && same(i, j) {
			j++
		}
		name := fmt.Sprint(i)
		if j-i > 1 {
			name = fmt.Sprintf("%d–%d", i, j-1)
		}
		f(name, i)
		i = j
	}
}

// deviceLine says which device the plan is for.
func deviceLine(p planJSON) string {
	if p.Device != plan.CUDA {
		return "planned for the cpu device\n"
	}
	return fmt.Sprintf("planned for a cuda device of compute capability %d: each holds cuBLAS's workspace (%s, tag workspace) from the start\n",
		p.CUDAMajor, device.FormatBytes(p.ResidentBytes))
}

// rankRows writes a table of the ranks' bytes, one line per group of
// consecutive ranks with the same bytes (and the same host's, on a line
// below them); first is the first column after the rank: the total
// ("peak") or the model states.
func rankRows(b *strings.Builder, ranks []rankJSON, first string, of func(rankJSON) (bytesJSON, *bytesJSON)) {
	fmt.Fprintf(b, "%-9s %13s %12s %12s %12s %12s %12s %12s %12s\n", "rank", first, "parameter", "gradient",
		"optimizer", "activation", "workspace", "comm.", "other")
	same := func(i, j int) bool {
		v, host := of(ranks[i])
		w, h := of(ranks[j])
		return w == v && sameHost(h, host)
	}
	rankRuns(len(ranks), same, func(name string, i int) {
		v, host := of(ranks[i])
		row(b, name, v, first == "peak")
		if host != nil {
			row(b, "  host", *host, first == "peak")
		}
	})
}

// row writes one line of rankRows: the total or the model states, then
// every tag.
func row(b *strings.Builder, name string, v bytesJSON, total bool) {
	f := device.FormatBytes
	lead := v.ModelState
	if total {
		lead = v.Peak
	}
	fmt.Fprintf(b, "%-9s %13s %12s %12s %12s %12s %12s %12s %12s\n", name, f(lead), f(v.Parameter),
		f(v.Gradient), f(v.Optimizer), f(v.Activation), f(v.Workspace), f(v.Communication), f(v.Other))
}

func sameHost(a, b *bytesJSON) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// both renders bytes in binary units and, from a gigabyte on, in decimal
// GB too (as the ZeRO paper counts).
func both(n int64) string {
	if n < 1e9 {
		return device.FormatBytes(n)
	}
	return fmt.Sprintf("%s (%.3f GB)", device.FormatBytes(n), float64(n)/1e9)
}

// commas writes n with thousands separators.
func commas(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// writeTimeline saves a timeline as JSON, atomically.
func writeTimeline(path string, t *device.Timeline) error {
	var b bytes.Buffer
	if err := t.WriteJSON(&b); err != nil {
		return err
	}
	return train.WriteFileAtomic(path, b.Bytes())
}
