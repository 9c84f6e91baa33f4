//go:build amd64 && !noasm

package kernels

// The AVX2 loops of the quantization kernels, in quant_amd64.s, each bit
// for bit equal to its Go twin in quant.go and quantconv.go. n counts
// elements: a positive multiple of 32 for qAbsMaxAVX2 and qQuantizeAVX2, of
// 8 for qDequantBiasAVX2.

// qAbsMaxAVX2 returns the largest of the bit patterns of |src[i]| (the
// magnitude's bits, compared as unsigned integers).
//
//go:noescape
func qAbsMaxAVX2(src *float32, n int) uint32

// qQuantizeAVX2 writes dst[i] = round(clamp(src[i]·inv, −127, 127)), half
// to even, a NaN product giving −127.
//
//go:noescape
func qQuantizeAVX2(dst *int8, src *float32, n int, inv float32)

// qDequantBiasAVX2 writes out[i] = float32(in[i])·s + b (the product
// rounded first), then max(·, +0) when relu (a NaN or −0 giving +0).
//
//go:noescape
func qDequantBiasAVX2(out *float32, in *int32, n int, s, b float32, relu bool)
