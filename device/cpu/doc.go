// Package cpu is the computing CPU device: a device.Device whose segments
// are anonymous memory mapped from the operating system and whose Kernels
// run on the host's cores.
//
// Segments live outside Go's heap, so EmptyCache returns their memory to the
// system at once and the garbage collector never scans or frees tensor
// memory. Memory is zeroed when a segment is first reserved; a block reused
// from the cache is not zeroed again.
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
