//go:build linux

package cputime

import (
	"syscall"
	"time"
	"unsafe"
)

// Thread returns the processor time the calling thread has used
// (CLOCK_THREAD_CPUTIME_ID, to the nanosecond), 0 if it cannot tell. Lock
// the goroutine to its thread around the two readings.
func Thread() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
