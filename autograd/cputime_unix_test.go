//go:build unix

package autograd_test

import (
	"syscall"
	"time"
)

// cpuTime returns the processor time (user and system) this process has
// used so far: on a shared machine it does not count the time other
// processes hold the cores, as wall time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
