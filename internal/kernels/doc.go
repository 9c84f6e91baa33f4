// Package kernels holds the hot loops of the cpu device as functions on Go
// slices: elementwise arithmetic over strided layouts, reductions, GEMM and
// the neural-network kernels. It knows nothing of tensors or devices; the cpu
// device adapts device.Operands to these functions.
//
// Every function here has a plain Go implementation. Faster ones (assembly
// with run-time CPU-feature dispatch) replace them behind the same
// signatures, and the plain ones stay as the reference and the fallback.
package kernels
