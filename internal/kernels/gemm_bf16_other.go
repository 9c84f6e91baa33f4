//go:build noasm || !amd64

package kernels

// selectSbgemm: without assembly there is no bfloat16 pair kernel; 16-bit
// GEMMs widen while packing.
func selectSbgemm() *gemmKernel[float32] { return nil }
