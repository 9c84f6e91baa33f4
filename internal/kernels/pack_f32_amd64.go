//go:build !noasm && amd64

package kernels

// The Go entries to the assembly packers of pack_f32_amd64.s: each proves
// its panel and source in bounds before handing out raw pointers. Those
// that transpose work on blocks of 8 depths and leave a depth tail to
// their Go twin (packRows6, packRows12, packCols16, packCols32), which is
// also the packer of the noasm build and the tests' reference.

//go:noescape
func sgemmCopyRows16AVX2(dst, src *float32, ld, k int)

//go:noescape
func sgemmCopyRows32AVX512(dst, src *float32, ld, k int)

//go:noescape
func sgemmPackA6AVX2(dst, src *float32, ld, k int, alpha float32)

//go:noescape
func sgemmPackA12AVX2(dst, src *float32, ld, k int, alpha float32)

//go:noescape
func sgemmPackAT6AVX2(dst, src *float32, ld, k int, alpha float32)

//go:noescape
func sgemmPackAT12AVX2(dst, src *float32, ld, k int, alpha float32)

//go:noescape
func sgemmPackBTAVX2(dst, src *float32, ld, k, nr int)

// sgemmCopyRows16 copies k rows of 16 floats, ld apart from src[at:], into
// dst as k groups of 16.
func sgemmCopyRows16(dst, src []float32, at, ld, k int) {
	if rowsIn(dst, src, at, ld, k, 16) {
		sgemmCopyRows16AVX2(&dst[0], &src[at], ld, k)
	}
}

// sgemmCopyRows32 copies k rows of 32 floats, ld apart from src[at:], into
// dst as k groups of 32.
func sgemmCopyRows32(dst, src []float32, at, ld, k int) {
	if rowsIn(dst, src, at, ld, k, 32) {
		sgemmCopyRows32AVX512(&dst[0], &src[at], ld, k)
	}
}

// sgemmPackAT6 copies k rows of 6 floats, ld apart from src[at:], into dst
// as k groups of 6 times alpha.
func sgemmPackAT6(dst, src []float32, at, ld, k int, alpha float32) {
	if rowsIn(dst, src, at, ld, k, 6) {
		sgemmPackAT6AVX2(&dst[0], &src[at], ld, k, alpha)
	}
}

// sgemmPackAT12 copies k rows of 12 floats, ld apart from src[at:], into
// dst as k groups of 12 times alpha.
func sgemmPackAT12(dst, src []float32, at, ld, k int, alpha float32) {
	if rowsIn(dst, src, at, ld, k, 12) {
		sgemmPackAT12AVX2(&dst[0], &src[at], ld, k, alpha)
	}
}

// sgemmPackA6 turns 6 rows of k floats, ld apart from src[at:], into k
// groups of 6 times alpha.
func sgemmPackA6(dst, src []float32, at, ld, k int, alpha float32) {
	packRowsAsm(6, sgemmPackA6AVX2, packRows6[float32], dst, src, at, ld, k, alpha)
}

// sgemmPackA12 turns 12 rows of k floats, ld apart from src[at:], into k
// groups of 12 times alpha.
func sgemmPackA12(dst, src []float32, at, ld, k int, alpha float32) {
	packRowsAsm(12, sgemmPackA12AVX2, packRows12[float32], dst, src, at, ld, k, alpha)
}

// packRowsAsm packs mr rows of k floats, ld apart from src[at:], into k
// groups of mr times alpha: whole blocks of 8 depths by asm, the rest by
// tail.
func packRowsAsm(mr int, asm func(dst, src *float32, ld, k int, alpha float32),
	tail func(d, src []float32, at, ld, kc int, alpha float32), dst, src []float32, at, ld, k int, alpha float32) {
	k8 := k &^ 7
	if k8 > 0 {
		_ = dst[mr*k8-1]
		_ = src[at+(mr-1)*ld+k8-1]
		asm(&dst[0], &src[at], ld, k8, alpha)
	}
	if k8 < k {
		tail(dst[mr*k8:], src, at+k8, ld, k-k8, alpha)
	}
}

// sgemmPackBT16 turns 16 runs of k floats, ld apart from src[at:], into k
// groups of 16.
func sgemmPackBT16(dst, src []float32, at, ld, k int) {
	packColsAsm(16, packCols16[float32], dst, src, at, ld, k)
}

// sgemmPackBT32 turns 32 runs of k floats, ld apart from src[at:], into k
// groups of 32.
func sgemmPackBT32(dst, src []float32, at, ld, k int) {
	packColsAsm(32, packCols32[float32], dst, src, at, ld, k)
}

// packColsAsm turns nr runs of k floats, ld apart from src[at:], into k
// groups of nr: whole blocks of 8 depths in assembly, the rest by tail.
func packColsAsm(nr int, tail func(d, src []float32, at, ld, kc int), dst, src []float32, at, ld, k int) {
	k8 := k &^ 7
	if k8 > 0 {
		_ = dst[nr*k8-1]
		_ = src[at+(nr-1)*ld+k8-1]
		sgemmPackBTAVX2(&dst[0], &src[at], ld, k8, nr)
	}
	if k8 < k {
		tail(dst[nr*k8:], src, at+k8, ld, k-k8)
	}
}

// rowsIn proves k rows of width floats, ld apart from src[at:], and k
// groups of width floats at dst in bounds; it is false when k is 0.
func rowsIn(dst, src []float32, at, ld, k, width int) bool {
	if k == 0 {
		return false
	}
	_ = dst[width*k-1]
	_ = src[at+(k-1)*ld+width-1]
	return true
}
