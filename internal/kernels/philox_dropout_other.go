//go:build !amd64 || noasm

package kernels

// dropKeepAsm does nothing without the assembly: dropKeep runs in Go.
func dropKeepAsm[T Float](dst, src []T, words []uint32, m dropMask) int { return 0 }
