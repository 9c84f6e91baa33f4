//go:build !noasm && amd64

package kernels

// widenRowsBF16AVX2 writes k ≥ 1 rows of 16·n16 bfloat16, ldb bytes apart
// at src, to dst as k·16·n16 contiguous floats.
//
//go:noescape
func widenRowsBF16AVX2(dst *float32, src *uint16, ldb, k, n16 int)

// widenRowsF16AVX2 is widenRowsBF16AVX2 for binary16 (F16C).
//
//go:noescape
func widenRowsF16AVX2(dst *float32, src *uint16, ldb, k, n16 int)

// widenRows is widenRowsGo, in assembly when the CPU has AVX2 and w is a
// multiple of 16 (the float32 kernels' nr: 16 on AVX2, 32 on AVX-512).
func widenRows(d []float32, h []uint16, at, ld, k, w int, bf16 bool) {
	if !CPU.AVX2FMA || w%16 != 0 || k == 0 {
		widenRowsGo(d, h, at, ld, k, w, bf16)
		return
	}
	_ = d[k*w-1]
	_ = h[at+(k-1)*ld+w-1]
	if bf16 {
		widenRowsBF16AVX2(&d[0], &h[at], 2*ld, k, w/16)
	} else {
		widenRowsF16AVX2(&d[0], &h[at], 2*ld, k, w/16)
	}
}

// widenColsBF16AVX2 widens nr runs of k bfloat16 (nr and k multiples of
// 8), ldb bytes apart at src, into dst as k groups of nr floats.
//
//go:noescape
func widenColsBF16AVX2(dst *float32, src *uint16, ldb, k, nr int)

// widenCols is widenColsGo, blocks of 8 depths of bfloat16 in assembly
// when the CPU has AVX2 and nr is a multiple of 8, the depth tail and
// binary16 by the twin.
func widenCols(d []float32, h []uint16, at, ld, k, nr int, bf16 bool) {
	k8 := k &^ 7
	if !bf16 || !CPU.AVX2FMA || nr%8 != 0 || k8 == 0 {
		widenColsGo(d, h, at, ld, k, nr, bf16)
		return
	}
	_ = d[k8*nr-1]
	_ = h[at+(nr-1)*ld+k8-1]
	widenColsBF16AVX2(&d[0], &h[at], 2*ld, k8, nr)
	if k8 < k {
		widenColsGo(d[k8*nr:], h, at+k8, ld, k-k8, nr, bf16)
	}
}
