//go:build !linux

package kernels

import "time"

// threadCPUTime is 0 here: the benchmarks that use it fall back to wall
// time.
func threadCPUTime() time.Duration { return 0 }
