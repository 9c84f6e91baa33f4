// Package cpu is the computing CPU device: a device.Device whose segments
// are anonymous memory mapped from the operating system and whose Kernels
// run on the host's cores.
//
// Segments live outside Go's heap, so EmptyCache returns their memory to the
// system at once and the garbage collector never scans or frees tensor
// memory. A page becomes resident when it is first touched; when the
// allocator decommits a free range near the capacity, the whole pages in it
// go back to the system at once (madvise MADV_DONTNEED; pages shared with
// a live block stay) and read zero when touched again. Memory is zeroed
// when a segment is first reserved; a block reused from the cache is not
// zeroed again. Where mmap is not available (Go heap), decommitted memory
// stays until its segment goes.
//
// Several logical devices may exist at once (cpu:0, cpu:1, …). Each has its
// own allocator and accounting and an optional capacity, so one machine can
// stand in for a 24 GiB accelerator, or for four data-parallel ranks:
//
//	gpu := cpu.New(0, device.Options{Capacity: 24 << 30})
//	ranks := []*device.Device{cpu.New(0, device.Options{}), cpu.New(1, device.Options{})}
//
// They share the machine's cores. A cpu device allocates exactly as a meta
// device does (same rounding, segments, addresses and OOM points), so a
// meta run predicts a cpu run's memory byte for byte.
package cpu
