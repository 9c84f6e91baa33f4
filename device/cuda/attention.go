package cuda

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Attention kernels (kernels/attention.cu) work on square tiles of keys and
// queries held in shared memory; attnTile picks the largest tile (≤ 32) whose
// shared memory fits attnSmem bytes, and each kernel's footprint in
// elements of the compute type is one of the attn*Elems functions below.
const (
	attnThreads = 128
	attnSmem    = 48 << 10
	attnMaxTile = 32
)

// attnFwdBytes: L (double), M, C, Q, K
// (row stride d+1), V, S (row stride tile+1), O.
func attnFwdBytes(tile, d, size int) int {
	return 8*tile + size*(2*tile+tile*d+tile*(d+1)+tile*d+tile*(tile+1)+tile*d)
}

// attnKVBytes: K, V (row stride d+1), dK, dV, Q, dO, S, G (row stride
// tile+1), LS, D.
func attnKVBytes(tile, d, size int) int {
	return size * (2*tile*(d+1) + 4*tile*d + 2*tile*(tile+1) + 2*tile)
}

// attnQBytes: K, V (row stride d+1), Q, dO, dQ, S, G, LS, D.
func attnQBytes(tile, d, size int) int {
	return size * (2*tile*(d+1) + 3*tile*d + 2*tile*(tile+1) + 2*tile)
}

// attnTile returns the largest power-of-two tile ≤ attnMaxTile whose
// footprint fits attnSmem, and that footprint.
func (k *kern) attnTile(op string, d, size int, bytes func(tile, d, size int) int) (int, int) {
	for tile := attnMaxTile; tile >= 1; tile /= 2 {
		if b := bytes(tile, d, size); b <= attnSmem {
			return tile, b
		}
	}
	k.bad(op, "head dimension %d: the %d-byte shared memory of a block cannot hold one row of each tile", d, attnSmem)
	return 0, 0
}

// attnLaunch is a launch of attnThreads-thread blocks, one per (head,
// tile) up to rowBlocks.
func attnLaunch(heads, t, tile, smem int) Launch {
	units := heads * ((t + tile - 1) / tile)
	return Launch{Grid: [3]uint32{uint32(min(units, rowBlocks)), 1, 1}, Block: [3]uint32{attnThreads, 1, 1}, Shared: uint32(smem)}
}

// attnCheck checks attention's dtypes: one float dtype for the tensors, lse
// in its compute dtype (F64 for F64, F32 otherwise).
func (k *kern) attnCheck(op string, lse device.Operand, os ...device.Operand) dtype.DType {
	dt := k.sameFloat(op, os...)
	if lse.DType != computeDType(dt) {
		k.bad(op, "lse of dtype %s for %s inputs: want %s", lse.DType, dt, computeDType(dt))
	}
	return dt
}

// Attention runs attention_T (kernels/attention.cu).
func (k *kern) Attention(out, lse, q, kk, v device.Operand, b, h, t, d int, scale float64, causal bool) {
	dt := k.attnCheck("Attention", lse, out, q, kk, v)
	if b*h*t*d == 0 {
		return
	}
	tile, smem := k.attnTile("Attention", d, computeDType(dt).Size(), attnFwdBytes)
	k.launch("attention_"+Suffix(dt), attnLaunch(b*h, t, tile, smem), k.Ptr(out), k.Ptr(lse), k.Ptr(q), k.Ptr(kk), k.Ptr(v),
		I64(int64(b*h)), I64(int64(t)), Int(d), F64(scale), Int(b2i(causal)), Int(tile))
}

// AttentionGrad runs attention_grad_kv_T for dk and dv, then
// attention_grad_q_T for dq (kernels/attention.cu).
func (k *kern) AttentionGrad(dq, dk, dv, dout, q, kk, v, out, lse device.Operand, b, h, t, d int, scale float64, causal bool) {
	dt := k.attnCheck("AttentionGrad", lse, dq, dk, dv, dout, q, kk, v, out)
	if b*h*t*d == 0 {
		return
	}
	size := computeDType(dt).Size()
	tile, smem := k.attnTile("AttentionGrad", d, size, attnKVBytes)
	k.launch("attention_grad_kv_"+Suffix(dt), attnLaunch(b*h, t, tile, smem), k.Ptr(dk), k.Ptr(dv), k.Ptr(dout), k.Ptr(q), k.Ptr(kk), k.Ptr(v),
		k.Ptr(out), k.Ptr(lse), I64(int64(b*h)), I64(int64(t)), Int(d), F64(scale), Int(b2i(causal)), Int(tile))
	tile, smem = k.attnTile("AttentionGrad", d, size, attnQBytes)
	k.launch("attention_grad_q_"+Suffix(dt), attnLaunch(b*h, t, tile, smem), k.Ptr(dq), k.Ptr(dout), k.Ptr(q), k.Ptr(kk), k.Ptr(v),
		k.Ptr(out), k.Ptr(lse), I64(int64(b*h)), I64(int64(t)), Int(d), F64(scale), Int(b2i(causal)), Int(tile))
}
