package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Conv2dI8 computes a quantized convolution into float32:
//
//	y[n][k][p] = relu?( acc·(xscale·wscale[k]) + bias[k] )
//	acc        = Σ over (c, r, s) of xq[n][c][…]·wq[k][c][r][s]   (exact int32)
//
// for xq (N, C, H, W) and wq (K, C/G, R, S) int8, y (N, K, OH, OW) float32,
// bias nil or K values, each product rounded as in DequantI32 (no fused
// multiply-add). The zero padding is the integer 0, exact for symmetric
// quantization.
//
// The work is cut into units of chunk samples of one group, which the
// workers claim one at a time, each unit on one goroutine: the im2col
// matrix of the unit's samples side by side, (C/G·R·S) × (chunk·OH·OW)
// int8, widened into the GEMM's packed panels while it is still in cache,
// one int8 GEMM (K/G × C/G·R·S) · col into an int32 accumulator
// (K/G × chunk·OH·OW), and the epilogue into y. col and acc hold the
// workspaces of one or more workers (I8Workspace's sizes each); a worker
// beyond them, and every worker's packed panels, use pooled Go-heap
// buffers.
func Conv2dI8(p ConvArgs, y []float32, xq, wq []int8, xscale float32, wscale, bias []float32, relu bool, chunk int, col []int8, acc []int32) {
	d := p.dims()
	cw, aw := p.I8Workspace(chunk)
	switch {
	case chunk <= 0 || len(col) < cw || len(acc) < aw:
		panic(fmt.Sprintf("kernels.Conv2dI8: chunk %d, workspaces %d and %d, want at least %d and %d", chunk, len(col), len(acc), cw, aw))
	case len(wscale) != p.K || (bias != nil && len(bias) != p.K):
		panic(fmt.Sprintf("kernels.Conv2dI8: %d weight scales and %d biases for %d filters", len(wscale), len(bias), p.K))
	case len(xq) < p.N*d.xs || len(y) < p.N*d.ys || len(wq) < p.Groups*d.wg:
		panic(fmt.Sprintf("kernels.Conv2dI8: slices x %d, y %d, w %d too short for %+v", len(xq), len(y), len(wq), p))
	}
	if d.crs > MaxI8K {
		panic(fmt.Sprintf("kernels.Conv2dI8: C/G·R·S = %d exceeds MaxI8K", d.crs))
	}
	if p.N == 0 || d.ohw == 0 || p.K == 0 {
		return
	}
	chunks := ceilDiv(p.N, chunk)
	units := chunks * p.Groups
	slots := 0
	if cw > 0 && aw > 0 {
		slots = min(len(col)/cw, len(acc)/aw)
	}
	var next atomic.Int64
	work := func(slot, _ int) {
		var cbuf []int8
		var abuf []int32
		var own *i8ConvBuf
		if slot < slots {
			cbuf, abuf = col[slot*cw:(slot+1)*cw], acc[slot*aw:(slot+1)*aw]
		} else {
			own = getI8ConvBuf(cw, aw)
			cbuf, abuf = own.col, own.acc
		}
		packed := getI16(&packBPool, packedI8Len(d.crs, min(chunk, p.N)*d.ohw))
		phases, _ := phasePool.Get().(*[]int8) // im2colI8Stride2's scratch
		if phases == nil {
			phases = new([]int8)
		}
		for u := int(next.Add(1) - 1); u < units; u = int(next.Add(1) - 1) {
			n0, g := u/p.Groups*chunk, u%p.Groups
			cnt := min(chunk, p.N-n0)
			cols := cnt * d.ohw
			for i := range cnt {
				xo := (n0+i)*d.xs + g*d.cg*d.hw
				im2colI8(p, cbuf[i*d.ohw:], cols, xq[xo:xo+d.cg*d.hw], d.cg, phases)
			}
			kp := (d.crs + 1) / 2
			b := PackedI8{K: d.crs, N: cols, kp: kp, panels: packed.s, quads: i8UseQuads()}
			if b.quads {
				packI8BQuads(asBytes(packed.s), d.crs, cols, cbuf, cols, 0, ceilDiv(d.crs, 4))
				i8RectQuads(wq[g*d.wg:], d.crs, &b, abuf, cols, 0, d.kg, 0, ceilDiv(cols, i8NR))
			} else {
				packI8BPairs(packed.s, d.crs, cols, cbuf, cols, 0, kp)
				i8Rect(wq[g*d.wg:], d.crs, &b, abuf, cols, 0, d.kg, 0, ceilDiv(cols, i8NR))
			}
			for kk := range d.kg {
				k := g*d.kg + kk
				bk := float32(0)
				if bias != nil {
					bk = bias[k]
				}
				for i := range cnt {
					out := y[(n0+i)*d.ys+k*d.ohw:][:d.ohw]
					dequantBiasRow(out, abuf[kk*cols+i*d.ohw:][:d.ohw], xscale*wscale[k], bk, relu)
				}
			}
		}
		packBPool.Put(packed)
		phasePool.Put(phases)
		if own != nil {
			i8ConvBufs.Put(own)
		}
	}
	if parts := min(Workers(), units); parts > 1 {
		ParallelFor(parts, 1, work)
	} else {
		work(0, 1)
	}
}

// i8ConvBuf is the Go-heap workspace of a Conv2dI8 worker that the
// caller's workspaces have no room for.
type i8ConvBuf struct {
	col []int8
	acc []int32
}

var i8ConvBufs, phasePool sync.Pool

func getI8ConvBuf(cw, aw int) *i8ConvBuf {
	b, _ := i8ConvBufs.Get().(*i8ConvBuf)
	if b == nil {
		b = &i8ConvBuf{}
	}
	if cap(b.col) < cw {
		b.col = make([]int8, cw)
	}
	if cap(b.acc) < aw {
		b.acc = make([]int32, aw)
	}
	b.col, b.acc = b.col[:cw], b.acc[:aw]
	return b
}

// I8Workspace returns the int8 elements of one Conv2dI8 worker's im2col
// workspace and the int32 elements of its accumulator for units of chunk
// samples (at most N): (C/G·R·S)·(c·OH·OW) and (K/G)·(c·OH·OW) with
// c = min(chunk, N).
func (p ConvArgs) I8Workspace(chunk int) (col, acc int) {
	c := min(chunk, p.N)
	ohw := p.OH * p.OW
	return p.C / p.Groups * p.R * p.S * c * ohw, p.K / p.Groups * c * ohw
}

// dequantBiasRow writes out[j] = relu?(float32(in[j])·s + b), the product
// rounded before the addition; the ReLU gives +0 for a negative result, a
// −0 and a NaN (as VMAXPS with +0 does).
func dequantBiasRow(out []float32, in []int32, s, b float32, relu bool) {
	in = in[:len(out)]
	j := 0
	if CPU.AVX2FMA && len(out) >= 8 {
		j = len(out) &^ 7
		qDequantBiasAVX2(&out[0], &in[0], j, s, b, relu)
	}
	if !relu {
		for ; j < len(out); j++ {
			out[j] = float32(float32(in[j])*s) + b
		}
		return
	}
	for ; j < len(out); j++ {
		out[j] = relu32(float32(float32(in[j])*s) + b)
	}
}

// relu32 returns f when f > 0 and +0 otherwise (negatives, −0, NaN),
// without a branch: the bits are cleared when the sign is set or the
// magnitude's bits exceed +Inf's.
func relu32(f float32) float32 {
	u := math.Float32bits(f)
	a := int32(u &^ (1 << 31))
	m := uint32(int32(u)>>31) | uint32((0x7f800000-a)>>31)
	return math.Float32frombits(u &^ m)
}

// im2colI8 writes the (cg·R·S) × (OH·OW) im2col matrix of x (cg, H, W)
// into col with row stride ld: row (c, r, s), column (oh, ow) holds
// x[c, oh·sh−ph+r·dh, ow·sw−pw+s·dw], or 0 in the padding. phases is
// scratch that the stride-2 path grows as it needs.
func im2colI8(p ConvArgs, col []int8, ld int, x []int8, cg int, phases *[]int8) {
	switch {
	case p.StrideH == 1 && p.StrideW == 1 && p.OW == p.W:
		im2colI8Same(p, col, ld, x, cg)
		return
	case p.StrideH == 2 && p.StrideW == 2 && p.W%2 == 0 && p.OW == p.W/2:
		im2colI8Stride2(p, col, ld, x, cg, phases)
		return
	}
	row := 0
	for c := range cg {
		plane := x[c*p.H*p.W : (c+1)*p.H*p.W]
		for r := range p.R {
			hoff := r*p.DilH - p.PadH
			hlo, hhi := convRange(hoff, p.StrideH, p.H, p.OH)
			for s := range p.S {
				woff := s*p.DilW - p.PadW
				wlo, whi := convRange(woff, p.StrideW, p.W, p.OW)
				dst := col[row*ld : row*ld+p.OH*p.OW]
				row++
				clear(dst[:hlo*p.OW])
				clear(dst[hhi*p.OW:])
				if wlo >= whi {
					clear(dst[hlo*p.OW : hhi*p.OW])
					continue
				}
				sw := p.StrideW
				for oh := hlo; oh < hhi; oh++ {
					out := dst[oh*p.OW : (oh+1)*p.OW]
					for i := range wlo { // a few columns: no clear call
						out[i] = 0
					}
					for i := whi; i < len(out); i++ {
						out[i] = 0
					}
					src := plane[(oh*p.StrideH+hoff)*p.W+wlo*sw+woff:]
					src = src[:(whi-wlo-1)*sw+1]
					o := out[wlo:whi]
					switch sw {
					case 1:
						copy(o, src)
					case 2:
						evenBytes(o, src)
					default:
						for i := range o {
							o[i] = src[i*sw]
						}
					}
				}
			}
		}
	}
}

// im2colI8Same is im2colI8 for stride 1 with OW = W (the "same" padding
// of odd kernels, and unpadded 1×1): each (c, r, s) row of col is the
// plane shifted by the window offset (shiftRows).
func im2colI8Same(p ConvArgs, col []int8, ld int, x []int8, cg int) {
	hw, ohw := p.H*p.W, p.OH*p.OW
	row := 0
	for c := range cg {
		plane := x[c*hw : (c+1)*hw]
		for r := range p.R {
			for s := range p.S {
				shiftRows(col[row*ld:row*ld+ohw], plane, p.H, p.OW, r*p.DilH-p.PadH, s*p.DilW-p.PadW)
				row++
			}
		}
	}
}

// im2colI8Stride2 is im2colI8 for stride 2 with an even W and OW = W/2
// (the "same" padding of odd kernels, and unpadded 1×1): every plane is
// first split into its four phases, the even and odd rows × the even and
// odd columns, each (rows) × W/2; a window offset o = r·dh − ph then reads
// phase o mod 2 shifted by ⌊o/2⌋ rows (and likewise for the columns), so
// each (c, r, s) row of col is one phase plane shifted (shiftRows) — the
// stride-2 gather runs once per plane instead of once per window offset.
func im2colI8Stride2(p ConvArgs, col []int8, ld int, x []int8, cg int, phases *[]int8) {
	hw, ohw, half := p.H*p.W, p.OH*p.OW, p.W/2
	rows := [2]int{(p.H + 1) / 2, p.H / 2} // rows of the even and odd phases
	if cap(*phases) < hw {
		*phases = make([]int8, hw)
	}
	ph := (*phases)[:hw]
	// The phase (a, b) starts at base[a][b] in ph.
	base := [2][2]int{{0, rows[0] * half}, {2 * rows[0] * half, 2*rows[0]*half + rows[1]*half}}
	row := 0
	for c := range cg {
		plane := x[c*hw : (c+1)*hw]
		for i := range p.H {
			a, ri := i&1, i>>1
			splitRow(ph[base[a][0]+ri*half:][:half], ph[base[a][1]+ri*half:][:half], plane[i*p.W:(i+1)*p.W])
		}
		for r := range p.R {
			oh := r*p.DilH - p.PadH
			a := oh & 1
			for s := range p.S {
				ow := s*p.DilW - p.PadW
				b := ow & 1
				shiftRows(col[row*ld:row*ld+ohw], ph[base[a][b]:base[a][b]+rows[a]*half], rows[a], p.OW, (oh-a)/2, (ow-b)/2)
				row++
			}
		}
	}
}

// splitRow sets e[j] = src[2j] and o[j] = src[2j+1] for the 2·len(e)
// bytes of src, eight pairs at a time from two 64-bit loads (see
// compactEven).
func splitRow(e, o, src []int8) {
	n := len(e)
	o, src = o[:n], src[:2*n]
	j := 0
	if n >= 8 {
		eb := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(e))), n)
		ob := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(o))), n)
		sb := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(src))), 2*n)
		for {
			lo := binary.LittleEndian.Uint64(sb[2*j:])
			hi := binary.LittleEndian.Uint64(sb[2*j+8:])
			binary.LittleEndian.PutUint64(eb[j:], compactEven(lo)|compactEven(hi)<<32)
			binary.LittleEndian.PutUint64(ob[j:], compactEven(lo>>8)|compactEven(hi>>8)<<32)
			if j += 8; j+8 > n {
				break
			}
		}
		if j < n { // the last eight pairs again, overlapping: no scalar tail
			j = n - 8
			lo := binary.LittleEndian.Uint64(sb[2*j:])
			hi := binary.LittleEndian.Uint64(sb[2*j+8:])
			binary.LittleEndian.PutUint64(eb[j:], compactEven(lo)|compactEven(hi)<<32)
			binary.LittleEndian.PutUint64(ob[j:], compactEven(lo>>8)|compactEven(hi>>8)<<32)
			j = n
		}
	}
	for ; j < n; j++ {
		e[j], o[j] = src[2*j], src[2*j+1]
	}
}

// shiftRows sets dst (OH·OW values, OH = len(dst)/ow) to the plane (h
// rows of ow values) shifted by (hoff, woff): dst[i·ow + j] =
// plane[(i+hoff)·ow + j+woff], or 0 where that lies outside the plane.
// Rows of dst and plane have the same length, so the valid rows are one
// copy, after which the columns that wrapped around are cleared.
func shiftRows(dst, plane []int8, h, ow, hoff, woff int) {
	oh := len(dst) / ow
	hlo, hhi := convRange(hoff, 1, h, oh)
	wlo, whi := convRange(woff, 1, ow, ow)
	clear(dst[:hlo*ow])
	clear(dst[hhi*ow:])
	if hlo >= hhi {
		return
	}
	lo, hi := hlo*ow, hhi*ow
	d := hoff*ow + woff // source index minus destination index
	a, b := max(lo, -d), min(hi, h*ow-d)
	if a < b {
		copy(dst[a:b], plane[a+d:b+d])
	}
	// Clear the wrapped columns, one strided pass per column: a 3×3
	// window's offsets wrap one column at either edge.
	for j := range min(wlo, ow) {
		for i := lo + j; i < hi; i += ow {
			dst[i] = 0
		}
	}
	for j := max(whi, 0); j < ow; j++ {
		for i := lo + j; i < hi; i += ow {
			dst[i] = 0
		}
	}
}

// evenBytes sets o[i] = src[2i] for every i of o (src holds at least
// 2·len(o)−1 bytes), eight at a time: two little-endian 64-bit loads, whose
// even bytes are compacted with shifts and masks into one 64-bit store.
func evenBytes(o, src []int8) {
	i := 0
	if len(src) >= 16 {
		ob := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(o))), len(o))
		sb := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(src))), len(src))
		for ; i+8 <= len(o) && 2*i+16 <= len(sb); i += 8 {
			lo := compactEven(binary.LittleEndian.Uint64(sb[2*i:]))
			hi := compactEven(binary.LittleEndian.Uint64(sb[2*i+8:]))
			binary.LittleEndian.PutUint64(ob[i:], lo|hi<<32)
		}
	}
	for ; i < len(o); i++ {
		o[i] = src[2*i]
	}
}

// compactEven returns the four even bytes of x (bytes 0, 2, 4, 6) as the
// low 32 bits, in order.
func compactEven(x uint64) uint64 {
	x &= 0x00ff00ff00ff00ff
	x = (x | x>>8) & 0x0000ffff0000ffff
	return (x | x>>16) & 0x00000000ffffffff
}
