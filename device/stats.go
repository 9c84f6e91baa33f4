package device

import "encoding/json"

// Counter is one row of the accounting: bytes now, the most ever at once
// since the last ResetPeak, totals allocated and freed, and how many
// allocations and frees made them. Allocated-Freed == Current always.
type Counter struct {
	Current   int64 `json:"current"`
	Peak      int64 `json:"peak"`
	Allocated int64 `json:"allocated"`
	Freed     int64 `json:"freed"`
	Allocs    int64 `json:"allocs"`
	Frees     int64 `json:"frees"`
}

func (c *Counter) add(n int64) {
	c.Current += n
	c.Allocated += n
	c.Allocs++
	if c.Current > c.Peak {
		c.Peak = c.Current
	}
}

func (c *Counter) sub(n int64) {
	c.Current -= n
	c.Freed += n
	c.Frees++
}

// Stats is a snapshot of a device's accounting.
//
// Three levels are counted, as in PyTorch's caching allocator:
// Requested is the exact bytes of live blocks (what tensors need: the numbers
// that closed-form memory formulas predict); Allocated is the same blocks
// rounded up to the allocator's granularity; Reserved is the committed
// memory of the segments the device holds from its backend, cached free
// space included. A device's capacity bounds Reserved; a program fits
// under a capacity exactly when its Allocated peak on an unlimited device
// does (see the package doc, Capacity and OOM).
type Stats struct {
	Device   string `json:"device"`
	Capacity int64  `json:"capacity"`
	// Requested counts exact requested bytes of all tags together.
	Requested Counter `json:"requested"`
	// ByTag counts exact requested bytes per tag.
	ByTag [NumTags]Counter `json:"-"`
	// AtPeak is ByTag's Current at the moment Requested reached its peak:
	// what the memory held when it was fullest.
	AtPeak [NumTags]int64 `json:"-"`
	// Allocated counts live blocks at their rounded sizes.
	Allocated Counter `json:"allocated"`
	// Reserved counts the committed bytes of the segments held from the
	// backend. Its Allocs count segment reservations and commits within a
	// segment, its Frees releases and decommits (one each per segment, far
	// from the capacity).
	Reserved Counter `json:"reserved"`
	// Segments is the number of segments held now, committed or not.
	Segments int `json:"segments"`
	// LargestFree is the largest free cached (committed) block.
	LargestFree int64 `json:"largest_free"`
	// OOMs counts allocations that failed for lack of capacity.
	OOMs int64 `json:"ooms"`
	// CacheFlushes counts the times an allocation had to give cached
	// memory back to fit (or, after a failure of the backend, return its
	// wholly free segments).
	CacheFlushes int64 `json:"cache_flushes"`
}

// Tag returns the counter of one tag.
func (s Stats) Tag(t Tag) Counter { return s.ByTag[t] }

// CachedFree returns reserved bytes not used by any block.
func (s Stats) CachedFree() int64 { return s.Reserved.Current - s.Allocated.Current }

// Stats returns a snapshot of the device's accounting.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.st
	s.LargestFree = d.largestFree()
	return s
}

// PeakBytes returns the peak of exact requested bytes since the last
// ResetPeak, all tags together (like torch.cuda.max_memory_allocated, but
// exact rather than rounded).
func (d *Device) PeakBytes() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.Requested.Peak
}

// CurrentBytes returns the exact requested bytes of live blocks.
func (d *Device) CurrentBytes() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.Requested.Current
}

// ResetPeak sets every peak to the current value, so that the next peaks
// measure only what follows (torch.cuda.reset_peak_memory_stats).
func (d *Device) ResetPeak() {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := &d.st
	st.Requested.Peak = st.Requested.Current
	st.Allocated.Peak = st.Allocated.Current
	st.Reserved.Peak = st.Reserved.Current
	for t := range st.ByTag {
		st.ByTag[t].Peak = st.ByTag[t].Current
		st.AtPeak[t] = st.ByTag[t].Current
	}
}

type statsAlias Stats

type statsJSON struct {
	statsAlias
	ByTag  map[string]Counter `json:"by_tag"`
	AtPeak map[string]int64   `json:"at_peak"`
}

// MarshalJSON writes the snapshot with per-tag maps keyed by tag name.
func (s Stats) MarshalJSON() ([]byte, error) {
	j := statsJSON{statsAlias: statsAlias(s), ByTag: map[string]Counter{}, AtPeak: map[string]int64{}}
	for t := range NumTags {
		j.ByTag[t.String()] = s.ByTag[t]
		j.AtPeak[t.String()] = s.AtPeak[t]
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Stats) UnmarshalJSON(b []byte) error {
	var j statsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Stats(j.statsAlias)
	for name, c := range j.ByTag {
		t, err := ParseTag(name)
		if err != nil {
			return err
		}
		s.ByTag[t] = c
	}
	for name, n := range j.AtPeak {
		t, err := ParseTag(name)
		if err != nil {
			return err
		}
		s.AtPeak[t] = n
	}
	return nil
}
