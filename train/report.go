package train

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
)

// Report is the JSON record of a run (--report FILE): what was trained,
// how it ended and, from the allocator, exactly how much memory each kind
// of tensor took at its peak.
type Report struct {
	Example string `json:"example"`
	Model   string `json:"model"`
	Params  int64  `json:"params"`
	Steps   int    `json:"steps"`
	// FinalLoss is the training loss of the last step.
	FinalLoss float64 `json:"final_loss"`
	// Eval is the final evaluation: test accuracy (a fraction) for image
	// classifiers, validation loss (nats per token) for language models;
	// EvalMetric names it.
	Eval          float64 `json:"eval"`
	EvalMetric    string  `json:"eval_metric"`
	SamplesPerSec float64 `json:"samples_per_sec"`
	Seconds       float64 `json:"seconds"`
	// PeakBytes is each tag's own peak and the total's (exact bytes).
	PeakBytes     PeakBytes         `json:"peak_bytes"`
	CapacityBytes int64             `json:"capacity_bytes"`
	Flags         map[string]string `json:"flags"`
	// Extra holds example-specific results (samples generated, …).
	Extra map[string]any `json:"extra,omitempty"`
	Stats device.Stats   `json:"stats"`
	// Kernels names what ran the kernels, so speeds are read for it: on
	// a cuda device cuda.KernelPath ("cuda sm_90 (NVIDIA H200)"), else the
	// cpu's instruction-set path (cpu.KernelPath: go, avx2, avx512 or
	// avx512+vnni, +bf16 with VDPBF16PS), which Write fills in when it is
	// empty.
	Kernels string `json:"kernels"`
	// MemView is the run's --mem-view page (its whole memory timeline),
	// relative to the report's folder, when one was written: headroom
	// view FILE reads the events from it. The report names the page rather
	// than holding the events, which would make it grow by about 150
	// bytes of JSON per event (the page stores about 10).
	MemView string `json:"mem_view,omitempty"`
}

// PeakBytes is the peak of exact requested bytes per tag, and of all tags
// together (Total, which is not the sum: tags peak at different times).
type PeakBytes struct {
	Total         int64 `json:"total"`
	Parameter     int64 `json:"parameter"`
	Gradient      int64 `json:"gradient"`
	Optimizer     int64 `json:"optimizer"`
	Activation    int64 `json:"activation"`
	Workspace     int64 `json:"workspace"`
	Communication int64 `json:"communication"`
	Other         int64 `json:"other"`
}

// Peaks reads PeakBytes from a device's statistics.
func Peaks(st device.Stats) PeakBytes {
	p := func(t device.Tag) int64 { return st.ByTag[t].Peak }
	return PeakBytes{
		Total: st.Requested.Peak, Parameter: p(device.Parameter), Gradient: p(device.Gradient),
		Optimizer: p(device.Optimizer), Activation: p(device.Activation), Workspace: p(device.Workspace),
		Communication: p(device.Communication), Other: p(device.Other),
	}
}

// ReadReport reads a report that Write wrote and checks it (see
// Report.Check): a file with impossible numbers is refused with an error
// naming the field and its value, rather than summarized.
func ReadReport(rd io.Reader) (*Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("reading a report: %w", err)
	}
	if err := r.Check(); err != nil {
		return nil, fmt.Errorf("reading a report: %w", err)
	}
	return &r, nil
}

// Check reports the first number of r that no run can have written: a
// negative count, size, time or rate; peaks that do not fit together (see
// PeakBytes.Check); or statistics whose counters contradict each other
// (see CheckStats).
func (r *Report) Check() error {
	if err := NonNegative(map[string]float64{"params": float64(r.Params), "steps": float64(r.Steps),
		"capacity_bytes": float64(r.CapacityBytes), "samples_per_sec": r.SamplesPerSec, "seconds": r.Seconds}); err != nil {
		return err
	}
	if err := r.PeakBytes.Check(); err != nil {
		return fmt.Errorf("peak_bytes: %w", err)
	}
	if err := CheckStats(r.Stats); err != nil {
		return fmt.Errorf("stats: %w", err)
	}
	return nil
}

// NonNegative returns an error naming the first (in name order) of nums
// below zero, "name is v, want ≥ 0"; nil when none is. The readers of
// reports and bench results use it.
func NonNegative(nums map[string]float64) error {
	for _, k := range slices.Sorted(maps.Keys(nums)) {
		if nums[k] < 0 {
			return fmt.Errorf("%s is %v, want ≥ 0", k, nums[k])
		}
	}
	return nil
}

// Check reports the first field of p that cannot be a set of peaks: a
// negative one, a tag's peak above the total's (a tag never holds more
// than all tags together), or a total above the sum of the tags' peaks
// (at the total's peak the tags held all of it).
func (p PeakBytes) Check() error {
	if p.Total < 0 {
		return fmt.Errorf("total is %d, want ≥ 0", p.Total)
	}
	tags := p.tags()
	var sum int64
	for i, n := range tags {
		name := device.Tag(i).String()
		switch {
		case n < 0:
			return fmt.Errorf("%s is %d, want ≥ 0", name, n)
		case n > p.Total:
			return fmt.Errorf("%s is %d, above the total %d", name, n, p.Total)
		}
		sum += n
	}
	if p.Total > sum {
		return fmt.Errorf("total %d is above the %d bytes of the tags' peaks together", p.Total, sum)
	}
	return nil
}

// CheckHeld checks p as what each tag held at one moment (the total's
// peak): Check's rules, and the tags add up to the total.
func (p PeakBytes) CheckHeld() error {
	if err := p.Check(); err != nil {
		return err
	}
	var sum int64
	for _, n := range p.tags() {
		sum += n
	}
	if sum != p.Total {
		return fmt.Errorf("the tags hold %d bytes together, not the total %d", sum, p.Total)
	}
	return nil
}

// tags lists p's tag fields in device.Tags order.
func (p PeakBytes) tags() [device.NumTags]int64 {
	return [device.NumTags]int64{p.Parameter, p.Gradient, p.Optimizer, p.Activation, p.Workspace, p.Communication, p.Other}
}

// CheckStats reports the first counter of st that a device cannot have
// produced: any negative number; a counter whose current value is above its
// peak, whose peak is above all it ever allocated, or whose allocated minus
// freed bytes is not its current value, or that freed more often than it
// allocated; tags whose current bytes do not add up to the requested
// total, or whose bytes at the peak do not add up to the requested peak or
// exceed their own peak; or levels out of order (requested ≤ allocated ≤
// reserved, now and at the peak).
func CheckStats(st device.Stats) error {
	counters := []struct {
		name string
		c    device.Counter
	}{{"requested", st.Requested}, {"allocated", st.Allocated}, {"reserved", st.Reserved}}
	for _, t := range device.Tags() {
		counters = append(counters, struct {
			name string
			c    device.Counter
		}{"by_tag." + t.String(), st.ByTag[t]})
	}
	for _, c := range counters {
		if err := checkCounter(c.c); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"capacity", st.Capacity}, {"segments", int64(st.Segments)}, {"largest_free", st.LargestFree},
		{"ooms", st.OOMs}, {"cache_flushes", st.CacheFlushes}} {
		if f.v < 0 {
			return fmt.Errorf("%s is %d, want ≥ 0", f.name, f.v)
		}
	}
	return checkLevels(st)
}

// checkLevels checks how st's counters relate to each other.
func checkLevels(st device.Stats) error {
	var cur, held int64
	for _, t := range device.Tags() {
		cur += st.ByTag[t].Current
		held += st.AtPeak[t]
		if n := st.AtPeak[t]; n < 0 || n > st.ByTag[t].Peak {
			return fmt.Errorf("at_peak.%s is %d, want 0 to its own peak %d", t, n, st.ByTag[t].Peak)
		}
	}
	r, a, v := st.Requested, st.Allocated, st.Reserved
	switch {
	case cur != r.Current:
		return fmt.Errorf("the tags' current bytes add up to %d, not requested.current %d", cur, r.Current)
	case held != r.Peak:
		return fmt.Errorf("at_peak adds up to %d, not requested.peak %d", held, r.Peak)
	case r.Current > a.Current || a.Current > v.Current:
		return fmt.Errorf("current bytes: requested %d, allocated %d, reserved %d; want them in that order, each ≤ the next", r.Current, a.Current, v.Current)
	case r.Peak > a.Peak || a.Peak > v.Peak:
		return fmt.Errorf("peaks: requested %d, allocated %d, reserved %d; want them in that order, each ≤ the next", r.Peak, a.Peak, v.Peak)
	case st.LargestFree > v.Current-a.Current:
		return fmt.Errorf("largest_free %d is above the %d cached free bytes (reserved − allocated)", st.LargestFree, v.Current-a.Current)
	}
	return nil
}

// checkCounter checks one counter's own invariants.
func checkCounter(c device.Counter) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"current", c.Current}, {"peak", c.Peak}, {"allocated", c.Allocated}, {"freed", c.Freed}, {"allocs", c.Allocs}, {"frees", c.Frees}} {
		if f.v < 0 {
			return fmt.Errorf("%s is %d, want ≥ 0", f.name, f.v)
		}
	}
	switch {
	case c.Current > c.Peak:
		return fmt.Errorf("current %d is above peak %d", c.Current, c.Peak)
	case c.Peak > c.Allocated:
		return fmt.Errorf("peak %d is above the %d bytes ever allocated", c.Peak, c.Allocated)
	case c.Allocated-c.Freed != c.Current:
		return fmt.Errorf("allocated %d − freed %d = %d, not current %d", c.Allocated, c.Freed, c.Allocated-c.Freed, c.Current)
	case c.Frees > c.Allocs:
		return fmt.Errorf("%d frees of %d allocations", c.Frees, c.Allocs)
	}
	return nil
}

// Write writes the report as indented JSON, atomically (temporary file and
// rename), filling in Kernels first when it is empty.
func (r *Report) Write(path string) error {
	if r.Kernels == "" {
		r.Kernels = cpu.KernelPath()
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return WriteFileAtomic(path, append(b, '\n'))
}

// WriteFileAtomic writes data to path through a temporary file in the same
// folder that is synced and renamed over path: readers see the old file or
// the new one, never a part.
func WriteFileAtomic(path string, data []byte) error {
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomic is WriteFileAtomic for content that fill streams to w: a
// failure of fill leaves path as it was.
func WriteAtomic(path string, fill func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	err = fill(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
