package cuda

import "github.com/headroom-ml/headroom/device"

// idxBuckets is IDX_BUCKETS of kernels/index.cu (the buckets of one block
// of index_add and scatter_add), idxGroups the most bucket groups
// (gridDim.y) a launch uses: destination rows are split into
// idxBuckets·groups buckets, one thread per (column, bucket).
const (
	idxBuckets = 8
	idxGroups  = 16
)

// widthSuffix names the element width of the bit-exact copies.
func (k *kern) widthSuffix(op string, dst, src device.Operand) string {
	if dst.DType != src.DType {
		k.bad(op, "from %s into %s: want one dtype", src.DType, dst.DType)
	}
	switch dst.DType.Size() {
	case 1:
		return "b8"
	case 2:
		return "b16"
	case 4:
		return "b32"
	case 8:
		return "b64"
	}
	k.bad(op, "dtype %s of element size %d: want 1, 2, 4 or 8 bytes", dst.DType, dst.DType.Size())
	return ""
}

// IndexSelect runs index_select_W_I (kernels/index.cu): one thread per
// output element. An index outside [0, n) writes zero bits.
func (k *kern) IndexSelect(dst, src, idx device.Operand, outer, n, inner int) {
	suf := k.widthSuffix("IndexSelect", dst, src) + "_" + k.indexSuffix("IndexSelect", idx)
	m := idx.Len()
	if outer*m*inner == 0 {
		return
	}
	k.launch("index_select_"+suf, Linear(outer*m*inner), k.Ptr(dst), k.Ptr(src), k.Ptr(idx),
		I64(int64(outer)), I64(int64(n)), I64(int64(m)), I64(int64(inner)))
}

// Gather runs gather_W_I (kernels/index.cu): one thread per output
// element.
func (k *kern) Gather(dst, src, idx device.Operand, outer, n, m, inner int) {
	suf := k.widthSuffix("Gather", dst, src) + "_" + k.indexSuffix("Gather", idx)
	if outer*m*inner == 0 {
		return
	}
	k.launch("gather_"+suf, Linear(outer*m*inner), k.Ptr(dst), k.Ptr(src), k.Ptr(idx),
		I64(int64(outer)), I64(int64(n)), I64(int64(m)), I64(int64(inner)))
}

// IndexAdd runs index_add_T_I (kernels/index.cu): deterministic, in the
// cpu's order, without atomics, so F32 and F64 results are the cpu's bit
// for bit; a 16-bit dst is rounded after each addition (on the cpu, once
// at the end). Indices outside [0, n) are skipped.
func (k *kern) IndexAdd(dst, idx, src device.Operand, outer, n, inner int) {
	k.addRows("IndexAdd", "index_add_", dst, idx, src, outer, n, idx.Len(), inner)
}

// ScatterAdd runs scatter_add_T_I (kernels/index.cu), as IndexAdd.
func (k *kern) ScatterAdd(dst, idx, src device.Operand, outer, n, m, inner int) {
	k.addRows("ScatterAdd", "scatter_add_", dst, idx, src, outer, n, m, inner)
}

// addRows launches index_add or scatter_add: blocks of 32 columns ×
// idxBuckets buckets, enough bucket groups for n rows (at most
// idxGroups), blocks striding over (outer, column tile).
func (k *kern) addRows(op, base string, dst, idx, src device.Operand, outer, n, m, inner int) {
	dt := k.sameFloat(op, dst, src)
	suf := Suffix(dt) + "_" + k.indexSuffix(op, idx)
	if outer*m*inner == 0 || n == 0 {
		return
	}
	groups := min(idxGroups, (n+idxBuckets-1)/idxBuckets)
	tiles := outer * ((inner + 31) / 32)
	l := Launch{Grid: [3]uint32{uint32(min(tiles, rowBlocks)), uint32(groups), 1}, Block: [3]uint32{32, idxBuckets, 1}}
	k.launch(base+suf, l, k.Ptr(dst), k.Ptr(idx), k.Ptr(src),
		I64(int64(outer)), I64(int64(n)), I64(int64(m)), I64(int64(inner)))
}
