package cuda

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/cuda"
)

// blasType maps a dtype to cuBLAS's data type.
func blasType(dt dtype.DType) (int, bool) {
	switch dt {
	case dtype.F32:
		return cuda.R32F, true
	case dtype.F64:
		return cuda.R64F, true
	case dtype.F16:
		return cuda.R16F, true
	case dtype.BF16:
		return cuda.R16BF, true
	}
	return 0, false
}

// Gemm queues C = alpha·op(A)·op(B) + beta·C on cuBLAS. headroom's
// matrices are row-major and cuBLAS's column-major; a row-major matrix is
// its transpose read column-major, so the call computes Cᵀ = op(B)ᵀ·op(A)ᵀ:
// A and B swap places (with their transposes, leading dimensions and
// strides) and M and N swap. F32 and F64 compute in their own precision
// (TF32 only with HEADROOM_CUDA_TF32=1); F16 and BF16 inputs accumulate in
// F32, and C may then be F32 too (cuBLAS's mixed-output GEMM: the 16-bit
// convolution weight gradient sums its samples in it). A bias is set
// into C first (biasFirst).
func (k *kern) Gemm(p device.Gemm) {
	g := k.g
	g.check()
	if err := p.CheckBias(); err != nil {
		k.bad("gemm", "%v", err)
	}
	c, ok := k.blasCall(p)
	if ok && p.Bias.Block != nil {
		k.biasFirst(p)
		c.Beta = 1
	}
	if !ok {
		return
	}
	if !g.submit(task{f: func() {
		if err := g.blas.Gemm(c); err != nil {
			g.fail(&opError{"gemm", err})
		}
	}}) {
		g.raise("gemm", ErrClosed)
	}
}

// blasCall checks p and maps it to cuBLAS's column-major call; ok is false
// when there is nothing to compute (M or N is 0).
func (k *kern) blasCall(p device.Gemm) (c cuda.Gemm, ok bool) {
	g := k.g
	t, known := blasType(p.A.DType)
	c32 := p.A.DType.IsLowPrecision() && p.C.DType == dtype.F32
	if !known || p.A.DType != p.B.DType || (p.A.DType != p.C.DType && !c32) {
		g.raise("gemm", fmt.Errorf("%w: dtypes A %s, B %s, C %s (want A, B and C of one dtype, F32, F64, F16 or BF16, or F16/BF16 A and B with an F32 C)", ErrUnsupported, p.A.DType, p.B.DType, p.C.DType))
	}
	for _, v := range []int{p.M, p.N, p.K, p.LdA, p.LdB, p.LdC, p.Batch} {
		if v < 0 || v != int(int32(v)) {
			g.raise("gemm", fmt.Errorf("size %d out of cuBLAS's 32-bit range (M %d N %d K %d)", v, p.M, p.N, p.K))
		}
	}
	if p.M == 0 || p.N == 0 {
		return c, false
	}
	op := func(tr bool) int {
		if tr {
			return cuda.OpT
		}
		return cuda.OpN
	}
	return cuda.Gemm{
		TransA: op(p.TransB), TransB: op(p.TransA),
		M: p.N, N: p.M, K: p.K, Alpha: p.Alpha, Beta: p.Beta,
		A: k.ptr(p.B), B: k.ptr(p.A), C: k.ptr(p.C),
		LdA: max(p.LdB, 1), LdB: max(p.LdA, 1), LdC: max(p.LdC, 1),
		StrideA: int64(p.StrideB), StrideB: int64(p.StrideA), StrideC: int64(p.StrideC),
		Batch: max(p.Batch, 1), Type: t, C32: c32,
	}, true
}

// biasFirst sets every C of p to beta·C + Bias ahead of the GEMM, which
// then runs with beta 1: the same sum, in the same order, as the cpu's
// fused bias. cublasGemmEx has no bias epilogue, so this costs a pass
// over C that cuBLASLt's CUBLASLT_EPILOGUE_BIAS would not (not bound
// yet). C matrices that overlap (StrideC 0 with a batch) are refused:
// each matrix would add the bias again.
func (k *kern) biasFirst(p device.Gemm) {
	batch := max(p.Batch, 1)
	if batch > 1 && p.StrideC < (p.M-1)*p.LdC+p.N {
		k.g.raise("gemm", fmt.Errorf("%w: a bias with overlapping C matrices (batch %d, StrideC %d)", ErrUnsupported, batch, p.StrideC))
	}
	shape := []int{batch, p.M, p.N}
	c := p.C
	c.Shape, c.Strides = shape, []int{p.StrideC, p.LdC, 1}
	b := p.Bias
	b.Shape, b.Strides = shape, []int{0, 0, 1}
	switch p.Beta {
	case 0:
		k.Copy(c, b)
		return
	case 1:
	default:
		k.Unary(device.Scale, c, c, p.Beta)
	}
	k.Binary(device.Add, c, c, b)
}

// ptr is the device address of o's first element.
func (k *kern) ptr(o device.Operand) cuda.DevPtr { return cuda.DevPtr(k.Ptr(o).v) }
