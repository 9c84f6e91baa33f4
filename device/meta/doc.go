// Package meta is the device that holds no data and computes nothing: it
// runs the shared caching allocator and its accounting over a backend that
// hands out address ranges only.
//
// A meta device rounds, caches, splits, reserves segments, assigns
// addresses and reports OOMs exactly as a cpu device does, so a program
// that allocates through it (a model's real training step) measures the
// peak memory it would use on cpu, byte for byte — for models far larger
// than the machine:
//
//	m := meta.New(0, device.Options{Capacity: 80 << 30})
//	// … run one training step on m …
//	fmt.Println(device.FormatBytes(m.PeakBytes()))
//
// Its Blocks have no host memory (Bytes returns nil) and its Kernels are
// nil: code that would compute must check Device.Kernels first.
package meta
