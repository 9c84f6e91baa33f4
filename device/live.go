package device

import "sort"

// LiveGroup is the live memory of one tag and creator.
type LiveGroup struct {
	Tag     Tag    `json:"tag"`
	Creator string `json:"creator"`
	Bytes   int64  `json:"bytes"`
	Blocks  int    `json:"blocks"`
}

// Live returns the live blocks grouped by tag and creator, largest first.
// After a training step has released its temporaries, what remains here is
// what the program still holds: parameters, gradients, optimizer state — or a
// leak.
func (d *Device) Live() []LiveGroup {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.liveGroups(func(Tag) bool { return true })
}

// Leaks returns the live groups whose tag is not in keep: with keep holding
// the long-lived tags (Parameter, Gradient, Optimizer), the result is the
// memory a finished step failed to release. Empty means no leak.
func (d *Device) Leaks(keep ...Tag) []LiveGroup {
	var kept [NumTags]bool
	for _, t := range keep {
		kept[t] = true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.liveGroupsOf(func(b *Block) bool { return !kept[b.label.Tag] && !b.resident })
}

// LiveBlocks returns the number of live blocks.
func (d *Device) LiveBlocks() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return int(d.st.Requested.Allocs - d.st.Requested.Frees)
}

func (d *Device) liveGroups(want func(Tag) bool) []LiveGroup {
	return d.liveGroupsOf(func(b *Block) bool { return want(b.label.Tag) })
}

// liveGroupsOf groups the live blocks that want selects; the caller holds
// d.mu.
func (d *Device) liveGroupsOf(want func(*Block) bool) []LiveGroup {
	type key struct {
		t Tag
		c string
	}
	idx := map[key]int{}
	var gs []LiveGroup
	for b := d.live; b != nil; b = b.older {
		if !want(b) {
			continue
		}
		k := key{b.label.Tag, b.label.Creator()}
		i, ok := idx[k]
		if !ok {
			i = len(gs)
			idx[k] = i
			gs = append(gs, LiveGroup{Tag: k.t, Creator: k.c})
		}
		gs[i].Bytes += b.n
		gs[i].Blocks++
	}
	sort.SliceStable(gs, func(i, j int) bool {
		if gs[i].Bytes != gs[j].Bytes {
			return gs[i].Bytes > gs[j].Bytes
		}
		if gs[i].Tag != gs[j].Tag {
			return gs[i].Tag < gs[j].Tag
		}
		return gs[i].Creator < gs[j].Creator
	})
	return gs
}
