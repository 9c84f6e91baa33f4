//go:build noasm || !amd64

package kernels

// selectSgemm picks the float32 micro-kernel: without assembly, the Go one.
func selectSgemm() gemmKernel[float32] { return sgemmGoKernel }

// sgemmAsmKernels reports that this build has no assembly kernels.
func sgemmAsmKernels() ([]gemmKernel[float32], string) {
	return nil, "built without assembly (noasm tag or not amd64)"
}
