//go:build !amd64 || noasm || amd64.v3

package kernels

// philoxNormalAsm does nothing without the assembly, or where the compiler
// may fuse math.Sincos's multiply-adds (GOAMD64=v3 and up), which the
// assembly, made to equal the unfused code, would then not equal.
func philoxNormalAsm(dst []float64, blocks [][4]uint32, mean, std float64) int { return 0 }
