//go:build !unix

package cpu

// osAlloc falls back to Go's heap where mmap is not available; the memory
// then returns when the garbage collector finds it unreferenced.
func osAlloc(n int64) ([]byte, error) { return make([]byte, n), nil }

func osFree([]byte) {}

// osDecommit cannot give heap memory back: the bytes stay until the
// segment goes.
func osDecommit([]byte, int64, int64) {}
