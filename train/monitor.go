package train

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/headroom-ml/headroom/device"
)

// Monitor watches a device step by step: it logs each step's memory and
// raises an Alert when a step's peak passes a fraction of the device's
// capacity, naming what grew — so that a run can save a resumable
// snapshot and stop cleanly before the out-of-memory error it is heading
// for (the field guide's "alarm at 90% and checkpoint").
type Monitor struct {
	// Threshold is the fraction of capacity that raises the alert;
	// default 0.9.
	Threshold float64
	// Log receives one JSON line per step (nil: no log): StepLog, with
	// the driver's free and total bytes on a GPU.
	Log io.Writer

	dev   *device.Device
	probe *device.Probe
	first []device.LiveGroup // live memory after the first step
	base  [device.NumTags]int64
	steps int
}

// StepLog is one line of the per-step memory log.
type StepLog struct {
	Step     int              `json:"step"`
	Peak     int64            `json:"peak"`
	Current  int64            `json:"current"`
	Reserved int64            `json:"reserved"`
	Capacity int64            `json:"capacity"`
	PeakTag  map[string]int64 `json:"peak_by_tag"`
	// DriverFree and DriverTotal are what the driver reports free and in
	// total on the device when the step ends (device.DriverMemory: a
	// GPU's cuMemGetInfo, every process's use and the driver's and
	// libraries' own included, as nvidia-smi shows it), beside the
	// allocator's numbers above; absent on cpu devices.
	DriverFree  int64 `json:"driver_free,omitempty"`
	DriverTotal int64 `json:"driver_total,omitempty"`
}

// Alert is the Monitor's error: a step's peak passed the threshold.
type Alert struct {
	Step      int
	Peak      int64
	Capacity  int64
	Threshold float64
	// Grew lists the tags whose step peak grew since the first step,
	// largest growth first; Creators the live allocations that grew most.
	Grew     []Growth
	Creators []Growth
}

// Growth is how much one tag or creator grew, in bytes.
type Growth struct {
	Name  string
	Bytes int64
}

func (a *Alert) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "memory alert at step %d: peak %s is %.0f%% of the capacity %s (threshold %.0f%%)",
		a.Step, device.FormatBytes(a.Peak), 100*float64(a.Peak)/float64(a.Capacity), device.FormatBytes(a.Capacity), 100*a.Threshold)
	for i, g := range a.Grew {
		if i == 0 {
			b.WriteString("; grew since the first step: ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s +%s", g.Name, device.FormatBytes(g.Bytes))
	}
	for i, g := range a.Creators {
		if i == 0 {
			b.WriteString("; largest growth by creator: ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s +%s", g.Name, device.FormatBytes(g.Bytes))
	}
	return b.String()
}

// Begin starts watching a step on dev (a nil *Monitor watches nothing).
func (m *Monitor) Begin(dev *device.Device) {
	if m == nil {
		return
	}
	m.dev = dev
	m.probe = dev.Probe()
}

// End ends the step begun by Begin: it writes the step's log line and
// returns an *Alert when the step's peak passed the threshold. On a device
// without a capacity it never alerts; a nil *Monitor returns nil.
func (m *Monitor) End(step int) error {
	if m == nil {
		return nil
	}
	if m.probe == nil {
		return fmt.Errorf("train: Monitor.End without Begin")
	}
	m.probe.Stop()
	st := m.dev.Stats()
	var peaks [device.NumTags]int64
	line := StepLog{Step: step, Peak: m.probe.TotalPeak(), Current: st.Requested.Current, Reserved: st.Reserved.Current,
		Capacity: st.Capacity, PeakTag: map[string]int64{}}
	for t := range device.NumTags {
		peaks[t] = m.probe.Peak(t)
		line.PeakTag[t.String()] = peaks[t]
	}
	if m.Log != nil {
		line.DriverFree, line.DriverTotal, _ = m.dev.DriverMemory()
		if b, err := json.Marshal(line); err == nil {
			m.Log.Write(append(b, '\n'))
		}
	}
	m.steps++
	if m.steps == 1 {
		m.base = peaks
		m.first = m.dev.Live()
	}
	th := m.Threshold
	if th == 0 {
		th = 0.9
	}
	if st.Capacity == 0 || float64(line.Peak) <= th*float64(st.Capacity) {
		return nil
	}
	a := &Alert{Step: step, Peak: line.Peak, Capacity: st.Capacity, Threshold: th}
	for t := range device.NumTags {
		if d := peaks[t] - m.base[t]; d > 0 {
			a.Grew = append(a.Grew, Growth{t.String(), d})
		}
	}
	sort.Slice(a.Grew, func(i, j int) bool { return a.Grew[i].Bytes > a.Grew[j].Bytes })
	was := map[string]int64{}
	for _, g := range m.first {
		was[g.Tag.String()+" "+g.Creator] += g.Bytes
	}
	for _, g := range m.dev.Live() {
		key := g.Tag.String() + " " + g.Creator
		if d := g.Bytes - was[key]; d > 0 {
			a.Creators = append(a.Creators, Growth{key, d})
		}
	}
	sort.Slice(a.Creators, func(i, j int) bool { return a.Creators[i].Bytes > a.Creators[j].Bytes })
	if len(a.Creators) > 3 {
		a.Creators = a.Creators[:3]
	}
	return a
}

// Watch returns the Monitor the flags ask for — nil without --mem-alert
// and --mem-log — and the function that closes its log. Check has checked
// the flags.
func (c *Common) Watch() (*Monitor, func(), error) {
	if c.MemAlert == 0 && c.MemLog == "" {
		return nil, func() {}, nil
	}
	m := &Monitor{Threshold: c.MemAlert}
	if c.MemAlert == 0 {
		m.Threshold = 2 // log only: never alert
	}
	closeLog := func() {}
	if c.MemLog != "" {
		f, err := os.Create(c.MemLog)
		if err != nil {
			return nil, nil, fmt.Errorf("--mem-log: %w", err)
		}
		m.Log, closeLog = f, func() { f.Close() }
	}
	return m, closeLog, nil
}
