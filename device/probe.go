package device

// Probe watches a device's exact requested bytes from the moment it is
// started, without touching the device's own peaks (ResetPeak): the way to
// measure the peak of one part of a step — a layer's recomputation, one
// technique in a benchmark — while the step's totals keep counting.
type Probe struct {
	d     *Device
	start [NumTags]int64
	peak  [NumTags]int64
	total [2]int64 // start and peak of all tags together
}

// Probe starts a probe at the device's current usage.
func (d *Device) Probe() *Probe {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := &Probe{d: d}
	for t := range NumTags {
		p.start[t] = d.st.ByTag[t].Current
		p.peak[t] = p.start[t]
	}
	p.total = [2]int64{d.st.Requested.Current, d.st.Requested.Current}
	d.probes = append(d.probes, p)
	return p
}

// Stop ends the probe; its numbers stay readable.
func (p *Probe) Stop() {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, q := range d.probes {
		if q == p {
			d.probes = append(d.probes[:i], d.probes[i+1:]...)
			return
		}
	}
}

// Peak returns the most bytes of tag t live at once since the probe started.
func (p *Probe) Peak(t Tag) int64 {
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	return p.peak[t]
}

// Rise returns how far tag t's bytes rose above their value at the start.
func (p *Probe) Rise(t Tag) int64 {
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	return p.peak[t] - p.start[t]
}

// TotalPeak returns the most bytes of all tags live at once since the start.
func (p *Probe) TotalPeak() int64 {
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	return p.total[1]
}

// observe updates the probes after an allocation or retag; d.mu is held.
func (d *Device) observe(t Tag) {
	for _, p := range d.probes {
		p.peak[t] = max(p.peak[t], d.st.ByTag[t].Current)
		p.total[1] = max(p.total[1], d.st.Requested.Current)
	}
}
