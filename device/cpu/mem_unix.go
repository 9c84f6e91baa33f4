//go:build unix

package cpu

import "syscall"

// osAlloc maps n bytes of anonymous zeroed memory.
func osAlloc(n int64) ([]byte, error) {
	return syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

// osFree unmaps memory from osAlloc.
func osFree(b []byte) {
	if err := syscall.Munmap(b); err != nil {
		panic("cpu: munmap: " + err.Error())
	}
}
