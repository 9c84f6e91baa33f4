//go:build unix

package kernels

import (
	"syscall"
	"time"
)

// cpuTime returns the processor time (user and system) this process has
// used so far, for benchmarks on a shared machine: unlike wall time it
// does not count the time other processes hold the cores.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
