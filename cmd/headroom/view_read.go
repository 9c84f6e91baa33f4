package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/headroom-ml/headroom/bench"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/train"
)

// readViewTimeline reads the timeline that arg holds or names: a timeline
// JSON; a memory page (an example's --mem-view, a bench row's view); a run
// report (--report) or a planner run (plan --json) naming one; a bench.json
// row, FILE#MODEL/TECHNIQUE. A file that names none says what to rerun.
func readViewTimeline(arg string) (*device.Timeline, error) {
	path, row := arg, ""
	if _, err := os.Stat(arg); err != nil {
		if i := strings.LastIndex(arg, "#"); i > 0 {
			path, row = arg[:i], arg[i+1:]
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(data, []byte("<!DOCTYPE html")) {
		return readViewPage(path, data)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return nil, train.Usagef("%s is neither a memory page nor a JSON object: %v", path, err)
	}
	has := func(k string) bool { _, ok := keys[k]; return ok }
	switch {
	case row != "" && !has("rows"):
		return nil, train.Usagef("%s: #%s names a bench row, but %s is not a bench.json", arg, row, path)
	case has("events"):
		tl, err := device.ReadTimeline(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return tl, nil
	case has("rows") && has("mode"):
		return readViewBench(path, row, data)
	case has("techniques") && has("ranks"):
		return readViewPlan(path, data)
	case has("peak_bytes") && has("stats"):
		return readViewReport(path, data)
	}
	return nil, train.Usagef("%s is not a memory timeline, a memory page, a run report, a planner run or a bench.json", path)
}

// readViewPage reads the one run of a memory page.
func readViewPage(path string, data []byte) (*device.Timeline, error) {
	tls, err := device.ReadHTML(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(tls) != 1 {
		return nil, train.Usagef("%s is a compare page of %d runs; view the page of each run instead", path, len(tls))
	}
	return tls[0], nil
}

// readViewFile reads the page or timeline JSON at name (nothing that names
// another file, so no chain of names can loop), relative to the folder of
// from (the file that names it) unless absolute; what says which field
// named it.
func readViewFile(from, name, what string) (*device.Timeline, error) {
	if !filepath.IsAbs(name) {
		name = filepath.Join(filepath.Dir(from), name)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("%s: its %s cannot be read (moved without it?): %w", from, what, err)
	}
	if bytes.HasPrefix(data, []byte("<!DOCTYPE html")) {
		return readViewPage(name, data)
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(data, &keys) != nil || keys["events"] == nil {
		return nil, train.Usagef("%s: its %s %s is neither a memory page nor a timeline JSON", from, what, name)
	}
	tl, err := device.ReadTimeline(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: its %s: %w", from, what, err)
	}
	return tl, nil
}

// readViewReport reads the page a run report names.
func readViewReport(path string, data []byte) (*device.Timeline, error) {
	r, err := train.ReadReport(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.MemView == "" {
		return nil, train.Usagef("%s is a run report without a memory page: rerun the example with --mem-view RUN.html --report %s (the report then names the page)", path, path)
	}
	return readViewFile(path, r.MemView, "mem_view")
}

// readViewPlan reads the timeline a planner run (plan --json) names.
func readViewPlan(path string, data []byte) (*device.Timeline, error) {
	var p planJSON
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, train.Usagef("%s: a planner run: %v", path, err)
	}
	if p.Timeline == "" {
		return nil, train.Usagef("%s is a planner run without a timeline: rerun headroom plan with the same flags and --timeline STEP.json", path)
	}
	return readViewFile(path, p.Timeline, "timeline")
}

// readViewBench reads the page of one bench.json row, MODEL/TECHNIQUE.
func readViewBench(path, row string, data []byte) (*device.Timeline, error) {
	res, err := bench.ReadResult(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var names []string
	for _, r := range res.Rows {
		name := r.Model + "/" + r.Technique
		if name != row {
			names = append(names, name)
			continue
		}
		if r.View == "" {
			return nil, train.Usagef("%s: row %s has no memory page (a bench.json written before rows kept one): rerun headroom bench", path, row)
		}
		return readViewFile(path, r.View, "row "+row+"'s view")
	}
	if row == "" {
		return nil, train.Usagef("%s is a bench.json of %d rows: name one as %s#MODEL/TECHNIQUE (rows: %s)", path, len(res.Rows), path, strings.Join(names, ", "))
	}
	return nil, train.Usagef("%s has no row %q (rows: %s)", path, row, strings.Join(names, ", "))
}
