package autograd

import (
	"fmt"
	"slices"

	"github.com/headroom-ml/headroom/device"
)

// LayerOffload moves what the ops of a stack's layers save for backward to
// a host device during the forward pass and brings it back, ahead of use,
// during backward (torch.autograd.graph.save_on_cpu, with a prefetch).
// Each Group is one layer. When backward first unpacks a tensor of group
// g, the groups g-1 … g-window (the next ones backward reaches) are
// fetched too: their device blocks are allocated at once, in the engine's
// goroutine, so the device's peak does not depend on timing, and the
// copies run on another goroutine while group g's backward computes. A
// fetched tensor's device copy goes back when the last op that saved it
// has used it; its host copy when the graph is freed.
//
// Only activation blocks move (parameters, and the blocks a Group is told
// to keep, stay where they are, held as plain autograd would). A block
// saved several times in one group (the same view) moves once. The copies
// stage through host buffers of at most TransferChunk bytes each, as To
// does: at most window+1 such buffers exist at once (one per running copy).
type LayerOffload struct {
	host   *device.Device
	window int
	groups []*offGroup
	byKey  map[string]*offEntry // every offloaded view, by block and layout
	stats  OffloadStats
}

// OffloadStats counts what a LayerOffload moved.
type OffloadStats struct {
	Tensors    int   // distinct tensors moved to the host
	Offloaded  int64 // bytes copied to the host during forward
	Fetched    int64 // bytes copied back to the device during backward
	Prefetched int   // groups fetched before backward first asked for them
}

// offGroup is one layer's offloaded tensors.
type offGroup struct {
	o       *LayerOffload
	idx     int
	entries []*offEntry
	begun   bool // backward has unpacked from it
}

// offEntry is one tensor moved to the host, saved uses times.
type offEntry struct {
	g       *offGroup
	host    *Tensor
	src     *device.Device
	dev     *Tensor       // the device copy while fetched
	ready   chan struct{} // closed when dev holds the bytes
	uses    int           // packs of it
	pending int           // unpacks left before the device copy goes
	live    int           // packs not yet freed
}

// keptSaved is a tensor a group leaves where it is.
type keptSaved struct {
	t *Tensor
	g *offGroup
}

// NewLayerOffload returns an offloader to host that prefetches window
// groups ahead (window < 0 is taken as 0: fetch on demand).
func NewLayerOffload(host *device.Device, window int) *LayerOffload {
	if host == nil {
		fail("offload", "no host device")
	}
	return &LayerOffload{host: host, window: max(window, 0), byKey: map[string]*offEntry{}}
}

// Stats returns what has moved so far.
func (o *LayerOffload) Stats() OffloadStats { return o.stats }

// Group returns the saved-tensor hooks of the next layer: push them on the
// scope for the layer's forward and pop them after. Tensors stored in the
// blocks of keep (the stack's input, which its caller holds anyway) are
// not moved.
func (o *LayerOffload) Group(keep ...*Tensor) SavedHooks {
	return o.group(true, keep)
}

// Resident returns the saved-tensor hooks of a layer whose tensors stay on
// the device (the last of a stack, whose backward comes first): its first
// unpack starts the prefetch of the window's groups before it.
func (o *LayerOffload) Resident() SavedHooks { return o.group(false, nil) }

// group makes the next group's hooks; move says whether it offloads.
func (o *LayerOffload) group(move bool, keep []*Tensor) SavedHooks {
	g := &offGroup{o: o, idx: len(o.groups)}
	o.groups = append(o.groups, g)
	skip := map[*device.Block]bool{}
	for _, t := range keep {
		if t != nil && t.blk != nil {
			skip[t.blk] = true
		}
	}
	return SavedHooks{
		Pack: func(t *Tensor) any {
			if t.blk.Label().Tag != device.Activation || skip[t.blk] || t.dev == o.host {
				return keptSaved{t, g}
			}
			if !move {
				o.settle(t)
				return keptSaved{t, g}
			}
			return g.pack(t)
		},
		Unpack: func(p any) *Tensor {
			if k, ok := p.(keptSaved); ok {
				k.g.begin()
				return alias(k.t)
			}
			return p.(*offEntry).unpack()
		},
		Free: func(p any) {
			if k, ok := p.(keptSaved); ok {
				k.t.Release()
				return
			}
			p.(*offEntry).free()
		},
	}
}

// pack copies t to the host (once per view of a block) and releases the
// op's handle on the device block. A view saved by several layers (one
// layer's output that the next reads) belongs to the last of them, which
// backward reaches first.
func (g *offGroup) pack(t *Tensor) *offEntry {
	key := viewKey(t)
	e := g.o.byKey[key]
	if e != nil && e.g != g {
		e.g.entries = slices.DeleteFunc(e.g.entries, func(x *offEntry) bool { return x == e })
		e.g = g
		g.entries = append(g.entries, e)
	}
	if e == nil {
		c := alloc(nil, g.o.host, t.dt, t.shape, device.Label{Tag: device.Activation, Op: "offload"})
		transfer(c, t)
		e = &offEntry{g: g, host: c, src: t.dev}
		g.o.byKey[key] = e
		g.entries = append(g.entries, e)
		g.o.stats.Tensors++
		g.o.stats.Offloaded += c.Bytes()
	}
	e.uses++
	e.pending++
	e.live++
	t.Release()
	return e
}

// settle keeps t on the device for an earlier group that moved it when a
// resident group saves it too: that group's backward uses the device
// block, and the host copy goes at once.
func (o *LayerOffload) settle(t *Tensor) {
	e := o.byKey[viewKey(t)]
	if e == nil || e.host == nil {
		return
	}
	e.host.Release()
	e.host = nil
	e.dev = alias(t)
	e.ready = make(chan struct{})
	close(e.ready)
}

// viewKey names a view of a block as saved: its block, the block's write
// count (a view written in place between two saves is two tensors), its
// offset, layout and dtype.
func viewKey(t *Tensor) string {
	return fmt.Sprint(t.blk.ID(), t.blk.Version(), t.off, t.shape, t.strides, t.dt)
}

// unpack returns a handle on the entry's device copy, fetching its group
// (and prefetching the window's) when backward reaches the group first.
func (e *offEntry) unpack() *Tensor {
	g := e.g
	g.begin()
	if e.dev == nil { // a second backward (RetainGraph): fetch again
		g.fetch()
	}
	<-e.ready
	t := alias(e.dev)
	if e.pending--; e.pending == 0 && e.host != nil {
		e.drop()
		e.pending = e.uses
	}
	return t
}

// begin fetches the group and prefetches the window's groups before it
// when backward reaches the group first.
func (g *offGroup) begin() {
	if g.begun {
		return
	}
	g.begun = true
	g.fetch()
	for i := g.idx - 1; i >= 0 && i >= g.idx-g.o.window; i-- {
		if n := g.o.groups[i]; !n.begun && n.fetch() {
			g.o.stats.Prefetched++
		}
	}
}

// fetch allocates a device copy for each entry that has none and copies
// the host bytes into them on another goroutine; it reports whether there
// was anything to fetch. When an allocation fails (out of memory), the
// copies already allocated are still made and marked ready, so that the
// graph's Free can give them back.
func (g *offGroup) fetch() bool {
	var todo []*offEntry
	ready := make(chan struct{})
	defer func() {
		if len(todo) > 0 {
			go copyIn(todo, ready)
		}
	}()
	for _, e := range g.entries {
		if e.dev != nil || e.live == 0 {
			continue
		}
		h := e.host
		d := alloc(nil, e.src, h.dt, h.shape, device.Label{Tag: device.Activation, Op: "offload_fetch"})
		e.dev, e.ready = d, ready
		g.o.stats.Fetched += h.Bytes()
		todo = append(todo, e)
	}
	return len(todo) > 0
}

// copyIn copies each entry's host bytes to its device copy, then closes
// ready.
func copyIn(todo []*offEntry, ready chan struct{}) {
	for _, e := range todo {
		transfer(e.dev, e.host)
	}
	close(ready)
}

// drop gives back the entry's device copy once its bytes have arrived.
func (e *offEntry) drop() {
	if e.dev == nil {
		return
	}
	<-e.ready
	e.dev.Release()
	e.dev = nil
}

// free is one saving op's Free: the last one gives back both copies.
func (e *offEntry) free() {
	if e.live--; e.live > 0 {
		return
	}
	e.drop()
	if e.host != nil {
		e.host.Release()
	}
}
