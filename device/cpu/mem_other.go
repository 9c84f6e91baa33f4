//go:build !unix

package cpu

// osAlloc falls back to Go's heap where mmap is not available; the memory
// then returns when the garbage collector finds it unreferenced.
func osAlloc(n int64) ([]byte, error) { return make([]byte, n), nil }

func osFree([]byte) {}
