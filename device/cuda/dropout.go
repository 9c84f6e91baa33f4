package cuda

import "github.com/headroom-ml/headroom/device"

// Dropout of kernels/dropout.cu: one thread a Philox block of four words,
// so a launch covers the blocks from offset/4 to (offset+n−1)/4.
func (k *kern) Dropout(dst, src device.Operand, p float64, seed, offset uint64) {
	k.floatDType("dropout", dst)
	k.sameDType("dropout", dst, src)
	k.sameShape("dropout", dst, src)
	if !(p >= 0 && p <= 1) {
		k.bad("dropout", "probability %g, want 0 ≤ p ≤ 1", p)
	}
	n := dst.Len()
	if n == 0 {
		return
	}
	l := k.layouts("dropout", dst.Shape, dst, src)
	blocks := (offset+uint64(n)-1)/4 - offset/4 + 1
	k.launch("dropout_"+Suffix(dst.DType), Linear(int(blocks)), k.Ptr(dst), l[0], k.Ptr(src), l[1], I64(int64(n)),
		F64(p), F64(1/(1-p)), U64(seed), U64(offset))
}
