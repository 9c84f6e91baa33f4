// Package kernels holds the hot loops of the cpu device as functions on Go
// slices: elementwise arithmetic over strided layouts, reductions, GEMM and
// the neural-network kernels. It knows nothing of tensors or devices; the cpu
// device adapts device.Operands to these functions.
//
// Every function here has a plain Go implementation. Faster ones (assembly
// with run-time CPU-feature dispatch) replace them behind the same
// signatures, and the plain ones stay as the reference and the fallback.
//
// 16-bit GEMM. GemmHalf reads F16 and BF16 operands as 16-bit bits. With
// both operands BF16, alpha 1 and a CPU with AVX512_BF16 it runs the
// VDPBF16PS pair micro-kernel (gemm_bf16.go, 12×32 tiles, kc 384), which
// multiplies bfloat16 pairs and accumulates in float32 with the
// instruction's rounding: each k pair adds its high then its low product,
// each rounded to float32, bfloat16 denormals read as zero and denormal
// results flushed, so its results differ from the float32 path's in the
// last bits (its Go twin, dotBF16Pair and sbgemmGo, is exact to the bit).
// Otherwise the operands are widened exactly to float32 while they are
// packed. No float32 copy of an operand is ever made.
//
// Memory. GEMM scratch is host memory outside the device allocator, kept
// between calls for reuse like a stack: each worker that has run a GEMM
// holds an mc×kc packed A block, a kc×nc packed B block (batch mode), an
// mr×nr tile and a widening strip of max(kc, mc, nr) float32 values, sized
// for the largest kernel it has run — 4·(240·192 + 192·2048 + 12·32 + 240)
// bytes ≈ 1.7 MiB for the float32 AVX-512 kernel, 4·(240·384 + 384·2048 +
// 12·32 + 384) ≈ 3.4 MiB for the bfloat16 pair kernel, whose pair panels
// use half of the float32 slots they sit in — and each GEMM in flight holds
// a shared B block of at most gemmBBudget values (8 MiB). The cpu device's
// tile scratch (device/cpu) is a FreeList of fixed-size tiles per worker.
package kernels
