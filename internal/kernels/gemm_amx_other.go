//go:build noasm || !amd64

package kernels

// selectAMX: without amd64 assembly there is no AMX kernel.
func selectAMX() *gemmKernel[float32] { return nil }

// amxPermit: without amd64 assembly AMX is never used.
func amxPermit() bool { return false }
