package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/headroom-ml/headroom/bench"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/train"
)

const summarySynopsis = `summary FILE [--json] [--png OUT.png] [--x time|event] [--around N]

Explains a saved file: a run report (an example's --report FILE): its key
numbers and the memory summary table; a memory timeline (JSON written by
device.Timeline.WriteJSON): its peak, the events around it and each tag's
traffic, and with --png a chart of it; or a bench.json: its table.`

func cmdSummary(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("summary")
	asJSON := fs.Bool("json", false, "print JSON")
	png := fs.String("png", "", "draw a timeline as a PNG file")
	around := fs.Int("around", 5, "events shown before and after a timeline's peak")
	x := fs.String("x", "", "the PNG's x axis: time or event (default: event for a meta device, whose times measure no arithmetic; time otherwise)")
	pos, err := parse(fs, summarySynopsis, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return train.Usagef("want one FILE, got %d arguments %q", len(pos), pos)
	}
	if *around < 0 {
		return train.Usagef("--around %d: want ≥ 0", *around)
	}
	if *x != "" && *x != "time" && *x != "event" {
		return train.Usagef("--x %q: want time or event", *x)
	}
	path := pos[0]
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return train.Usagef("%s is not a JSON object: %v", path, err)
	}
	has := func(k string) bool { _, ok := keys[k]; return ok }
	switch {
	case has("events"):
		return summarizeTimeline(path, data, *around, *png, *x, *asJSON, stdout)
	case *png != "":
		return train.Usagef("--png draws timelines; %s is not one", path)
	case has("rows") && has("mode"):
		res, err := bench.ReadResult(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if *asJSON {
			return writeJSON(stdout, res)
		}
		fmt.Fprint(stdout, res.Markdown())
		return nil
	case has("peak_bytes") && has("stats"):
		r, err := train.ReadReport(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return summarizeReport(r, *asJSON, stdout)
	}
	return train.Usagef("%s is neither a run report (--report), a memory timeline nor a bench.json", path)
}

func summarizeTimeline(path string, data []byte, around int, png, x string, asJSON bool, stdout io.Writer) error {
	tl, err := device.ReadTimeline(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	s := bench.Summarize(tl, around)
	if png != "" {
		byEvent := x == "event" || (x == "" && strings.HasPrefix(tl.Device, "meta"))
		if err := bench.TimelinePNG(tl, png, byEvent); err != nil {
			return err
		}
	}
	if asJSON {
		return writeJSON(stdout, s)
	}
	fmt.Fprint(stdout, s.String())
	if png != "" {
		fmt.Fprintf(stdout, "\nwrote %s\n", png)
	}
	return nil
}

// reportSummary is summary --json of a run report: the report's own
// fields, and what summary derives from them.
type reportSummary struct {
	Kind string `json:"kind"`
	*train.Report
	// Techniques are the technique flags the run set away from their
	// defaults; AtPeak what each tag held at the total's peak (non-zero
	// tags only).
	Techniques map[string]string `json:"techniques"`
	AtPeak     map[string]int64  `json:"at_peak"`
}

func summarizeReport(r *train.Report, asJSON bool, stdout io.Writer) error {
	s := reportSummary{Kind: "report", Report: r, Techniques: techniqueFlags(r.Flags), AtPeak: map[string]int64{}}
	for _, t := range device.Tags() {
		if n := r.Stats.AtPeak[t]; n > 0 {
			s.AtPeak[t.String()] = n
		}
	}
	if asJSON {
		return writeJSON(stdout, s)
	}
	fmt.Fprintf(stdout, "%s run: model %s, %s parameters, %d steps\n", r.Example, r.Model, commas(r.Params), r.Steps)
	eval := fmt.Sprintf("%s %.4f", strings.ReplaceAll(r.EvalMetric, "_", " "), r.Eval)
	if r.EvalMetric == "test_accuracy" {
		eval = fmt.Sprintf("test accuracy %.2f%%", 100*r.Eval)
	}
	fmt.Fprintf(stdout, "final loss %.4f, %s, %.1f samples/s, %.1f s\n", r.FinalLoss, eval, r.SamplesPerSec, r.Seconds)
	capacity := "unlimited"
	if r.CapacityBytes > 0 {
		capacity = device.FormatBytes(r.CapacityBytes)
	}
	var ts []string
	for k, v := range s.Techniques {
		ts = append(ts, "--"+k+"="+v)
	}
	sort.Strings(ts)
	tech := "none"
	if len(ts) > 0 {
		tech = strings.Join(ts, " ")
	}
	fmt.Fprintf(stdout, "capacity %s; techniques: %s\n", capacity, tech)
	p := r.PeakBytes
	fmt.Fprintf(stdout, "peak %s: parameter %s, gradient %s, optimizer %s, activation %s, workspace %s (each tag's own peak)\n\n",
		device.FormatBytes(p.Total), device.FormatBytes(p.Parameter), device.FormatBytes(p.Gradient), device.FormatBytes(p.Optimizer),
		device.FormatBytes(p.Activation), device.FormatBytes(p.Workspace))
	fmt.Fprint(stdout, r.Stats.Summary())
	return nil
}

// techniqueFlags picks the technique flags a run set away from their
// defaults.
func techniqueFlags(flags map[string]string) map[string]string {
	defaults := map[string]string{"amp": "", "amp-params": "false", "checkpoint": "", "checkpoint-budget": "", "accum": "1",
		"ranks": "1", "zero": "0", "offload": "false", "quantize": "", "prune": "0", "mem-alert": "0", "mem-limit": ""}
	out := map[string]string{}
	for k, def := range defaults {
		if v, ok := flags[k]; ok && v != def {
			out[k] = v
		}
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
