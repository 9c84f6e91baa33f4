//go:build unix

package cpu

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

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

// osDecommit returns to the operating system the pages that lie wholly in
// the n bytes at off of a mapping from osAlloc (which starts on a page); a
// later touch maps them again, zeroed.
func osDecommit(b []byte, off, n int64) {
	lo, hi := pageRange(off, n, int64(os.Getpagesize()))
	if lo >= hi {
		return
	}
	if err := unix.Madvise(b[lo:hi], unix.MADV_DONTNEED); err != nil {
		panic("cpu: madvise: " + err.Error())
	}
}
