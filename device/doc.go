// Package device is headroom's memory layer: a Device is one memory space
// with a caching allocator that knows, to the byte, what every live block
// is for and who asked for it.
//
// Every tensor byte on a device is a Block obtained from Device.Alloc with a
// Label: a Tag saying what it holds, the Op and Scope (layer path) that
// created it, and the step Phase. Blocks are reference-counted (Retain,
// Release); the last Release frees the block at that moment — never later,
// and never because Go's garbage collector ran.
//
//	dev := cpu.New(0, device.Options{Capacity: 24 << 30}) // or meta.New
//	b, err := dev.Alloc(4*B*T*C, device.Label{Tag: device.Activation, Op: "gelu", Scope: "h.3.mlp"})
//	if err != nil {
//		var oom *device.OOMError
//		if errors.As(err, &oom) { … } // what holds the memory, and hints
//	}
//	defer b.Release()
//	fmt.Print(dev.Summary())
//
// # Three levels: Requested, Allocated, Reserved
//
// Stats counts memory at three levels, as PyTorch's caching allocator does:
//
//   - Requested: the exact bytes of live blocks, also kept per tag (ByTag).
//     This is the number closed-form memory formulas predict ("Adam holds 8
//     bytes per F32 parameter"), and the one PeakBytes reports.
//   - Allocated: the same blocks at the sizes they occupy, each request
//     rounded up to 512 bytes (RoundSize). A block can be larger still when
//     the free chunk it came from left a remainder of at most 1 MiB in a
//     large segment: Block.BlockSize says.
//   - Reserved: the segments the device holds from its backend (mmap on
//     cpu), cached free space included. A capacity bounds Reserved.
//
// Each level is a Counter: Current, Peak (since the last ResetPeak), the
// totals Allocated and Freed (Allocated−Freed == Current), and the numbers
// of allocations and frees. AtPeak records each tag's bytes at the moment
// Requested reached its peak: what the memory held when it was fullest.
//
// # Tags
//
// Parameter, Gradient, Optimizer, Activation, Workspace, Communication and
// Other. Block.Retag moves a block between tags (counted as a free under
// the old tag and an allocation under the new one). Device.Live groups the
// live blocks by tag and creator, largest first; Device.Leaks(keep...)
// leaves out the long-lived tags, so after a training step
// Leaks(Parameter, Gradient, Optimizer) must be empty.
//
// A block counts how many of its references are saved ones
// (Block.RetainSaved: autograd's tensors saved for backward).
// Device.Unsaved lists the live activation blocks none of whose references
// is saved — during a forward pass, outputs that no later op reads in
// backward and that only handles keep alive — and Device.Summary and the
// OOMError's report show them by creator: what releasing sooner, or an
// in-place op, would give back.
//
// # Caching
//
// Blocks of at most 1 MiB are carved from 2 MiB "small" segments, larger
// ones from 20 MiB segments (requests under 10 MiB) or from a segment of
// their own, rounded up to 2 MiB. A request takes the smallest free chunk
// that holds it (best fit; ties go to the lower address), which is split
// when the remainder is worth keeping (any remainder in small segments,
// more than 1 MiB in large ones). A freed block merges with free
// neighbours and stays cached in its segment for the next request, so a
// training loop reaches a steady state without calling the backend.
// EmptyCache returns every wholly free segment to the backend; segments
// that still hold a live block stay.
//
// # Closing
//
// A device's segments live outside Go's heap (mmap on cpu), so the garbage
// collector never returns them: a dropped device keeps its memory. Close
// gives it back — the cache at once, each segment still holding a live
// block when its last block is released — refuses new allocations
// (ErrClosed) and returns a *LeakError naming what was still live. Stats
// stay readable after Close. Every program and planner run closes the
// devices it makes.
//
// Addresses (Block.Addr) are virtual and deterministic: segments are laid
// out at 2 MiB-aligned addresses in the order they are reserved, and never
// reused, so the same program gets the same addresses on every device kind.
//
// # Capacity and OOM
//
// With Options.Capacity (or SetCapacity) the device refuses to reserve
// beyond that many bytes. When a new segment would not fit, the allocator
// first cuts the segment to the exact rounded request; if even that does
// not fit it returns the wholly free cached segments (counted in
// Stats.CacheFlushes) when that makes room; otherwise Alloc returns an
// *OOMError. The error carries the request, the capacity, the live,
// reserved and reserved-but-unused bytes, the largest free block, the live
// bytes per tag, the top live allocations by tag and creator, and hints
// that follow from those numbers (activations dominate: checkpoint or a
// smaller micro-batch; unused memory in pieces smaller than the request:
// fragmentation). After an OOM nothing was allocated and the device is
// usable. MustAlloc panics with the *OOMError instead, for op code inside
// units of work that recover it.
//
// # Timeline
//
// StartTimeline records every alloc, free, retag, segment reservation and
// release, and OOM as an Event with its label and the running totals;
// StopTimeline returns the Timeline, which WriteJSON and ReadTimeline save
// and load and Peak searches.
//
// # Reading Summary
//
// Summary renders Stats as a table in the layout of
// torch.cuda.memory_summary. Columns: Cur Usage (now), Peak Usage (since
// ResetPeak), Tot Alloc and Tot Freed (since the device was made). Rows:
// Requested memory with one row per tag beneath it (exact bytes),
// Allocated memory (rounded), Reserved memory (segments), Cached free
// memory (reserved minus allocated: what EmptyCache or fragmentation
// accounts for), Largest free block, then the numbers of allocations per
// tag and of reserved segments. The last lines list the tags "at peak". A
// large gap between Reserved and Allocated with a small largest free block
// means fragmentation; Requested per tag at peak says what to shrink.
// Below the table Device.Summary lists the unsaved activations (Unsaved),
// when there are any; Stats.Summary cannot (a snapshot holds no blocks).
//
// # Backends and the Kernels seam
//
// A Backend supplies raw segments (Alloc, Free) and the device's Kernels.
// The caching and accounting above are shared, so cpu (package cpu: mmap'd
// host memory, computing) and meta (package meta: no memory, computing
// nothing) account identically, byte for byte, and an accelerator backend
// will too. Ops never index device memory: they allocate through the
// Device and hand Blocks to Kernels as Operands; Kernels never allocate.
package device
