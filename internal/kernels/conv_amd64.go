//go:build amd64 && !noasm

package kernels

// The AVX2 stride-2 row loops of conv_col.go, in conv_amd64.s. rows ≥ 1,
// n ≥ 8·blocks (16·blocks for 16-bit values); every row read or written
// lies inside its Go slice.

//go:noescape
func convGather2RowsF32(dst, src *float32, rows, n, dstStep, srcStep, blocks int)

//go:noescape
func convGather2RowsU16(dst, src *uint16, rows, n, dstStep, srcStep, blocks int)

//go:noescape
func convScatter2AddRowsF32(dst, src *float32, rows, n, dstStep, srcStep, blocks int)
