//go:build noasm || !amd64

package kernels

// selectAMX: without amd64 assembly there is no AMX kernel.
func selectAMX() *gemmKernel[float32] { return nil }

// amxPermit: without amd64 assembly AMX is never used.
func amxPermit() bool { return false }

// amxStepColsFast: no assembly packer here.
func amxStepColsFast(blk *[512]uint32, h []uint16, at, ld int) bool { return false }
