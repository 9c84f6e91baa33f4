//go:build !unix

package cputime

import "time"

// Process is 0 here: there is no getrusage.
func Process() time.Duration { return 0 }
