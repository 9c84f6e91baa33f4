//go:build !noasm && amd64

package kernels

// convDXKernelAVX512BF16 is the direct convolution's 12×32 tile (see
// conv_dx_amd64.s): np pairs per tap of A at a, the vectors' planes at b0
// and b1, masks m[0..5] (uint16), stored into c0 (the first vector's 16
// columns) and c1 (the second's), ldc in elements, as mode says (0 store,
// 1 accumulate); w and ps are the row and plane strides in words.
//
//go:noescape
func convDXKernelAVX512BF16(np int, a, b0, b1 *uint32, c0, c1 *float32, ldc, mode, w, ps int, m *uint16)

// convDXAsm is the checked Go entry to the assembly kernel (a dxKernel).
func convDXAsm(np int, a, xi []uint32, b0, b1 int, c0, c1 []float32, ldc, mode, w, ps int, m []uint16) {
	_ = a[9*np*dxMR-1]
	_ = c0[(dxMR-1)*ldc+dxVec-1]
	_ = c1[(dxMR-1)*ldc+dxVec-1]
	last := (np-1)*ps + 2*w + dxVec
	_ = xi[b0+last]
	_ = xi[b1+last]
	_ = xi[b0-1]
	_ = xi[b1-1]
	_ = m[5]
	convDXKernelAVX512BF16(np, &a[0], &xi[b0], &xi[b1], &c0[0], &c1[0], ldc, mode, w, ps, &m[0])
}

// dxPackPairsAVX512 packs n channel pairs of one filter (18 words each at
// w) into the dwords blk[t·st] of each pair's nine taps, blk stepping 12
// dwords per pair (see conv_dx_amd64.s).
//
//go:noescape
func dxPackPairsAVX512(n int, w *uint16, blk *uint32, st int)

// dxPackPairs is packRow's loop over whole channel pairs: in assembly
// when the CPU has AVX512_BF16 (and so BW), else in Go.
func dxPackPairs(blk []uint32, w []uint16, np, st int) {
	if !CPU.AVX512BF16 {
		packPairsGo(blk, w, np, st)
		return
	}
	_ = w[18*np-1]
	_ = blk[8*st+(np-1)*dxMR]
	dxPackPairsAVX512(np, &w[0], &blk[0], st)
}

// dxAsm is the assembly kernel on a CPU with AVX512_BF16, else nil.
func dxAsm() dxKernel {
	if CPU.AVX512BF16 {
		return convDXAsm
	}
	return nil
}
