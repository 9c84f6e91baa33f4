//go:build !linux

package cputime

import "time"

// Thread is 0 here: only Linux's per-thread clock is read.
func Thread() time.Duration { return 0 }
