package cuda

import "github.com/headroom-ml/headroom/device"

// lnLanes is LN_LANES of kernels/norm.cu: the row lanes of a block of
// layer_norm_grad_wb (32 columns × lnLanes).
const lnLanes = 16

// LayerNorm runs layer_norm_T_S (kernels/norm.cu); mean and rstd have the
// compute dtype of x (or x's own).
func (k *kern) LayerNorm(y, mean, rstd, x, w, b device.Operand, rows, cols int, eps float64) {
	dt := k.sameFloat("LayerNorm", y, x, w, b)
	suf := k.statSuffix("LayerNorm", dt, mean.DType)
	k.statSuffix("LayerNorm", dt, rstd.DType)
	if mean.DType != rstd.DType {
		k.bad("LayerNorm", "mean of dtype %s and rstd of dtype %s: want one dtype", mean.DType, rstd.DType)
	}
	if rows*cols == 0 {
		return
	}
	k.launch("layer_norm_"+suf, rowsLaunch(rows, cols), k.Ptr(y), k.Ptr(mean), k.Ptr(rstd), k.Ptr(x), k.Ptr(w), k.Ptr(b),
		I64(int64(rows)), I64(int64(cols)), F64(eps))
}

// LayerNormGrad runs layer_norm_grad_dx_T_S for dx and
// layer_norm_grad_wb_T_S for dw and db (kernels/norm.cu), each only when
// wanted.
func (k *kern) LayerNormGrad(dx, dw, db, dy, x, w, mean, rstd device.Operand, rows, cols int) {
	dt := k.sameFloat("LayerNormGrad", dy, dx, dw, db, x, w)
	suf := k.statSuffix("LayerNormGrad", dt, mean.DType)
	if mean.DType != rstd.DType {
		k.bad("LayerNormGrad", "mean of dtype %s and rstd of dtype %s: want one dtype", mean.DType, rstd.DType)
	}
	if cols == 0 {
		return
	}
	if !dx.Nil() && rows > 0 {
		k.launch("layer_norm_grad_dx_"+suf, rowsLaunch(rows, cols), k.Ptr(dx), k.Ptr(dy), k.Ptr(x), k.Ptr(w), k.Ptr(mean), k.Ptr(rstd),
			I64(int64(rows)), I64(int64(cols)))
	}
	if dw.Nil() && db.Nil() {
		return
	}
	tiles := (cols + 31) / 32
	l := Launch{Grid: [3]uint32{uint32(min(tiles, rowBlocks)), 1, 1}, Block: [3]uint32{32, lnLanes, 1}}
	k.launch("layer_norm_grad_wb_"+suf, l, k.Ptr(dw), k.Ptr(db), k.Ptr(dy), k.Ptr(x), k.Ptr(mean), k.Ptr(rstd),
		I64(int64(rows)), I64(int64(cols)))
}
