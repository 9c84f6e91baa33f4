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
//   - Reserved: the committed memory of the segments the device holds from
//     its backend (mmap on cpu), cached free space included: the whole of
//     each segment, except near the capacity (below). A capacity bounds
//     Reserved.
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
// With Options.Capacity (or SetCapacity) the device refuses to commit
// beyond that many bytes. Where a block goes never depends on the
// capacity: the chunk, the split and each new segment's size are what an
// unlimited device would choose. Near the capacity only the commitment
// differs, as with PyTorch's expandable segments: a new segment whose
// whole size would pass the capacity is committed only as far as its
// blocks go (the rest is address space, no memory), and a block that
// needs memory beyond the capacity first has every committed free chunk
// give its memory back (counted in Stats.CacheFlushes; on cpu the pages
// go back to the operating system, the segments and their addresses
// stay). A free chunk next to uncommitted space gives its memory back
// when it merges with it. Alloc returns an *OOMError only when the live
// blocks' sizes plus the new block's pass the capacity (or the backend
// fails), so no cached memory and no fragmentation can cause an OOM, and
// EmptyCache never helps one.
//
// The rule makes fitting monotone: a program (any sequence of
// allocations, frees and EmptyCache calls) fits under a fixed capacity C
// exactly when C is at least the peak of Stats.Allocated it reaches on an
// unlimited device — so it fits under every larger capacity too. The
// rule it replaces (cut a new segment to the request when a whole one
// would not fit) was not monotone: on 20 MiB, a 5 MiB block took a whole
// 20 MiB segment and a 1 MiB request then failed, while on 19 MiB both
// fitted. TestFitIsMonotoneInCapacity checks the rule on random programs.
//
// The error carries the request, the capacity, the live, reserved and
// reserved-but-unused bytes, the largest free block, the live bytes per
// tag, the top live allocations by tag and creator, where the block would
// have gone (its Pool, its Block size, the FreeChunk or NewSegment) and
// why it could not (Reason: the block alone passes the capacity, the live
// blocks' Occupied bytes plus the block pass it by Short, or the backend
// failed), and hints that follow from those numbers (how much live memory
// must go; activations dominate: checkpoint or a smaller micro-batch).
// After an OOM nothing was allocated and the device is usable. MustAlloc
// panics with the *OOMError instead, for op code inside units of work that
// recover it.
//
// InjectOOM makes the n-th allocation from now fail with an *OOMError
// (Cause ErrInjected), changing nothing else: the test hook that fails a
// training step at each of its allocations in turn, which capacities alone
// cannot (they bite only where a new segment is needed).
//
// # Timeline
//
// StartTimeline records every alloc, free, retag, segment reservation and
// release, commit and decommit within a segment, and OOM as an Event with its label and the running totals;
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
// memory (reserved minus allocated: the cache, which goes back under
// pressure), Largest free block (committed), then the numbers of
// allocations per tag and of segment reservations and commits. The last
// lines list the tags "at peak". On an unlimited device the Allocated
// peak since the device was made is the smallest capacity the run fits in;
// Requested per tag at peak says what to shrink.
// Below the table Device.Summary lists the unsaved activations (Unsaved),
// when there are any; Stats.Summary cannot (a snapshot holds no blocks).
//
// # Backends and the Kernels seam
//
// A Backend supplies raw segments (Alloc, Free), backs ranges of them with
// memory and gives it back (Commit, Decommit), and supplies the device's
// Kernels. The caching and accounting above are shared, so cpu (package cpu: mmap'd
// host memory, computing) and meta (package meta: no memory, computing
// nothing) account identically, byte for byte, and an accelerator backend
// will too. Ops never index device memory: they allocate through the
// Device and hand Blocks to Kernels as Operands; Kernels never allocate.
package device
