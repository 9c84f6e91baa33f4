//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Process returns the processor time (user and system) this process has
// used so far, 0 if getrusage fails.
func Process() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
