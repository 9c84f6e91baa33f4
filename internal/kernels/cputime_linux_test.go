//go:build linux

package kernels

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPUTime returns the processor time the calling thread has used
// (CLOCK_THREAD_CPUTIME_ID, to the nanosecond), 0 if it cannot tell: on a
// shared machine it leaves out the time the thread waited for its core.
func threadCPUTime() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
