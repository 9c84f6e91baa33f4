//go:build !unix

package kernels

import "time"

// cpuTime is not measured here; benchmarks then report no CPU-time metric.
func cpuTime() time.Duration { return 0 }
