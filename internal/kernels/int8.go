package kernels

import (
	"fmt"
	"sync"
	"unsafe"
)

// INT8 matrix multiplication with exact int32 accumulation, for quantized
// inference:
//
//	C (M×N int32) = A (M×K int8, row-major) · B (K×N int8)
//
// Ranges: every int8 value, -128 included, in A and B, and K up to
// MaxI8K = 131071. Then |C[i][j]| ≤ K·128·128 < 2^31 and the result equals
// the exact integer sum; nothing saturates (the VNNI layout wraps its
// intermediate sums, exactly; int8_quad.go). (PyTorch's and
// oneDNN's u8·s8 paths instead need 7-bit operands on CPUs without VNNI;
// this one does not.)
//
// How: both operands are widened to int16 while packing, and the AVX2
// micro-kernel multiplies with VPMADDWD, which forms a[k]·b[k] +
// a[k+1]·b[k+1] exactly in each 32-bit lane, then adds with VPADDD. The
// u8×s8 instruction VPMADDUBSW does twice the products per instruction
// but saturates its 16-bit pair sums (255·127·2 > 32767), so it is exact
// only for restricted ranges (7-bit activations, as PyTorch's fbgemm
// "reduce_range" uses on CPUs without VNNI, or 7-bit weights); and its
// result still needs a widening VPMADDWD on the same multiplier pipes, so
// on this Zen 3 core a synthetic VPMADDUBSW+VPMADDWD+VPADDD loop does only
// about 17% more multiply-adds per second than VPMADDWD+VPADDD.
//
// Packed layouts (int16, zero-padded):
//   - B: ⌈N/16⌉ panels of 16 columns; in a panel, for each k-pair p, the 16
//     columns' (b[2p][j], b[2p+1][j]) pairs: 64 bytes per pair, so a panel
//     is one contiguous stream the kernel reads front to back.
//   - A: blocks of up to i8MC rows by i8KC k-pairs, each row simply
//     widened (row-major, 4·i8KC bytes per row); the kernel broadcasts one
//     row's pair (32 bits) at a time from six row streams.
//
// B is usually a weight matrix used many times: PackI8 packs it once (from
// K×N, or from N×K as nn.Linear stores its weight) and GemmI8Packed reuses
// it; GemmI8 packs into a pooled buffer on every call.
//
// On CPUs with AVX512-VNNI every packing uses the quads layout instead
// (int8_quad.go): bytes in k-quads for VPDPBUSD, in the same storage and
// with the same exactness. A PackedI8 records which layout it holds.
//
// Workspace: the packed B holds 2·⌈N/16⌉·16·2·⌈K/2⌉ bytes; each worker packs
// A in blocks of i8MC rows and i8KC columns (96 KiB, pooled).

// MaxI8K is the largest K for which GemmI8 is exact for all int8 inputs.
const MaxI8K = (1<<31 - 1) / (128 * 128)

const (
	i8MR = 6   // rows of the micro-kernel tile
	i8NR = 16  // columns of the micro-kernel tile
	i8KC = 256 // k-pairs per block (K = 512 values)
	i8MC = 96  // rows of A per packed block, a multiple of i8MR
)

// PackedI8 is a K×N int8 matrix widened and laid out for GemmI8Packed.
type PackedI8 struct {
	K, N   int
	kp     int     // ⌈K/2⌉, the number of k-pairs
	panels []int16 // ⌈N/16⌉ panels of kp·32 values, or of quads (int8_quad.go)
	quads  bool    // the VNNI layout
}

// PackI8 packs the K×N matrix B for GemmI8Packed. With trans false, B[k][j]
// is b[k·ldb + j] (K×N row-major); with trans true it is b[j·ldb + k] (N×K
// row-major, the layout of a Linear layer's (out, in) weight).
func PackI8(k, n int, b []int8, ldb int, trans bool) *PackedI8 {
	checkI8Dims("PackI8", 1, n, k)
	p := &PackedI8{K: k, N: n, kp: (k + 1) / 2}
	p.panels = make([]int16, packedI8Len(k, n))
	p.pack(b, ldb, trans)
	return p
}

// pack fills p's panels from B (K×N, or N×K when trans) in the layout this
// CPU multiplies fastest: 16-column panels of k-pairs or of k-quads (see
// the file comments). The work is shared out by panel when B is N×K and
// by k-group otherwise, about 64 KiB of output per task.
func (p *PackedI8) pack(b []int8, ldb int, trans bool) {
	p.quads = i8UseQuads()
	k, n := p.K, p.N
	per := 2 // k values per group
	if p.quads {
		per = 4
	}
	groups := (k + per - 1) / per
	panelLen := groups * per * i8NR // int16 slots (pairs) or bytes (quads)
	panels := (n + i8NR - 1) / i8NR
	bytes := asBytes(p.panels)
	if trans {
		ParallelFor(panels, max(1, (1<<16)/panelLen), func(lo, hi int) {
			for jp := lo; jp < hi; jp++ {
				if p.quads {
					packI8BQuadsTrans(bytes[jp*panelLen:(jp+1)*panelLen], k, n, b, ldb, jp*i8NR)
				} else {
					packI8BTrans(p.panels[jp*panelLen:(jp+1)*panelLen], k, n, b, ldb, jp*i8NR)
				}
			}
		})
		return
	}
	ParallelFor(groups, max(1, (1<<16)/(per*n)), func(lo, hi int) {
		if p.quads {
			packI8BQuads(bytes, k, n, b, ldb, lo, hi)
		} else {
			packI8BPairs(p.panels, k, n, b, ldb, lo, hi)
		}
	})
}

func packedI8Len(k, n int) int {
	return (n + i8NR - 1) / i8NR * ((k + 1) / 2) * 2 * i8NR
}

// GemmI8 sets C = A·B with A M×K (a[i·lda + k]), B K×N (b[k·ldb + j]) and C
// M×N (c[i·ldc + j]), exactly, for K ≤ MaxI8K. It packs B on every call;
// use PackI8 and GemmI8Packed when B is reused.
func GemmI8(m, n, k int, a []int8, lda int, b []int8, ldb int, c []int32, ldc int) {
	checkI8Dims("GemmI8", m, n, k)
	if m == 0 || n == 0 {
		return
	}
	size := packedI8Len(k, n)
	buf := getI16(&packBPool, size)
	p := PackedI8{K: k, N: n, kp: (k + 1) / 2, panels: buf.s}
	p.pack(b, ldb, false)
	gemmI8(m, a, lda, &p, c, ldc)
	packBPool.Put(buf)
}

// GemmI8Packed sets C = A·B for A M×K (a[i·lda + k]) and a packed B, with C
// M×N (c[i·ldc + j]), exactly, for K ≤ MaxI8K.
func GemmI8Packed(m int, a []int8, lda int, b *PackedI8, c []int32, ldc int) {
	checkI8Dims("GemmI8Packed", m, b.N, b.K)
	if m == 0 || b.N == 0 {
		return
	}
	gemmI8(m, a, lda, b, c, ldc)
}

func checkI8Dims(fn string, m, n, k int) {
	if m < 0 || n < 0 || k < 1 || k > MaxI8K {
		panic(fmt.Sprintf("kernels.%s: m=%d n=%d k=%d; want m, n ≥ 0 and 1 ≤ k ≤ %d", fn, m, n, k, MaxI8K))
	}
}

// gemmI8 splits C into rectangles of whole tiles, one per worker: by rows
// when A has at least as many row tiles as B has column panels, by column
// panels otherwise.
func gemmI8(m int, a []int8, lda int, b *PackedI8, c []int32, ldc int) {
	n, k := b.N, b.K
	if lda < k || b.N > 0 && ldc < n {
		panic(fmt.Sprintf("kernels.GemmI8: lda=%d ldc=%d too small for k=%d n=%d", lda, ldc, k, n))
	}
	if len(a) < (m-1)*lda+k || len(c) < (m-1)*ldc+n {
		panic(fmt.Sprintf("kernels.GemmI8: len(a)=%d len(c)=%d too short for m=%d", len(a), len(c), m))
	}
	rect, mr := i8Rect, i8MR
	if b.quads {
		rect, mr = i8RectQuads, i8QMR
	}
	rowTiles := (m + mr - 1) / mr
	panels := (n + i8NR - 1) / i8NR
	grain := max(1, (1<<20)/(mr*i8NR*k)) // tiles of at least ~1M multiply-adds per worker
	if rowTiles >= panels {
		g := max(1, grain/panels)
		if rowTiles < 2*g || Workers() == 1 { // one piece: no closure to allocate
			rect(a, lda, b, c, ldc, 0, m, 0, panels)
			return
		}
		ParallelFor(rowTiles, g, func(lo, hi int) {
			rect(a, lda, b, c, ldc, lo*mr, min(hi*mr, m), 0, panels)
		})
		return
	}
	g := max(1, grain/rowTiles)
	if panels < 2*g || Workers() == 1 {
		rect(a, lda, b, c, ldc, 0, m, 0, panels)
		return
	}
	ParallelFor(panels, g, func(lo, hi int) {
		rect(a, lda, b, c, ldc, 0, m, lo, hi)
	})
}

// i8Rect computes rows [r0, r1) of C over column panels [p0, p1).
func i8Rect(a []int8, lda int, b *PackedI8, c []int32, ldc, r0, r1, p0, p1 int) {
	buf := getI16(&packAPool, i8MC*i8KC*2)
	abuf := buf.s
	var edge [i8MR * i8NR]int32
	n, kp := b.N, b.kp
	panelLen := kp * 2 * i8NR
	for ic := r0; ic < r1; ic += i8MC {
		mc := min(i8MC, r1-ic)
		for pc := 0; pc < kp; pc += i8KC {
			kc := min(i8KC, kp-pc)
			packI8A(abuf, a, lda, b.K, ic, mc, pc, kc)
			accumulate := pc > 0
			for jp := p0; jp < p1; jp++ {
				bp := b.panels[jp*panelLen+pc*2*i8NR:]
				j0 := jp * i8NR
				nr := min(i8NR, n-j0)
				for ir := 0; ir < mc; ir += i8MR {
					ap := abuf[ir*kc*2:]
					mr := min(i8MR, mc-ir)
					ci := (ic+ir)*ldc + j0
					if mr == i8MR && nr == i8NR {
						i8Kernel(kc, &ap[0], kc*2, &bp[0], &c[ci], ldc, accumulate)
						continue
					}
					i8Kernel(kc, &ap[0], kc*2, &bp[0], &edge[0], i8NR, false)
					mergeI8Edge(c[ci:], ldc, edge[:], mr, nr, accumulate)
				}
			}
		}
	}
	packAPool.Put(buf)
}

// mergeI8Edge stores (or, accumulating, adds) the top-left mr×nr of an
// edge tile computed whole into edge (row stride i8NR) into c (row stride
// ldc).
func mergeI8Edge(c []int32, ldc int, edge []int32, mr, nr int, accumulate bool) {
	for r := range mr {
		row := c[r*ldc : r*ldc+nr]
		e := edge[r*i8NR : r*i8NR+nr]
		if accumulate {
			for j := range row {
				row[j] += e[j]
			}
		} else {
			copy(row, e)
		}
	}
}

// packI8BPairs packs k-pairs [lo, hi) of the K×N row-major B into dst's
// panels, on the calling goroutine.
func packI8BPairs(dst []int16, k, n int, b []int8, ldb, lo, hi int) {
	panelLen := (k + 1) / 2 * 2 * i8NR
	panels := (n + i8NR - 1) / i8NR
	full := n / i8NR // panels with all 16 columns inside B
	var zero [i8NR]int8
	for p := lo; p < hi; p++ {
		r0 := b[2*p*ldb:]
		r1 := zero[:]
		if 2*p+1 < k {
			r1 = b[(2*p+1)*ldb:]
		}
		j0 := 0
		if CPU.AVX2FMA && full > 0 && 2*p+1 < k {
			i8PackBPairs(&dst[p*2*i8NR], &r0[0], &r1[0], full, panelLen*2)
			j0 = full * i8NR
		}
		for jp := j0 / i8NR; jp < panels; jp++ {
			o := (*[2 * i8NR]int16)(dst[jp*panelLen+p*2*i8NR:])
			for j := range i8NR {
				var v0, v1 int16
				if jj := jp*i8NR + j; jj < n {
					v0 = int16(r0[jj])
					if 2*p+1 < k {
						v1 = int16(r1[jj])
					}
				}
				o[2*j], o[2*j+1] = v0, v1
			}
		}
	}
}

// packI8BTrans packs the panel of columns [j0, j0+16) of B stored N×K
// (B[k][j] = b[j·ldb + k]): column j's pairs are consecutive bytes of row
// j of b.
func packI8BTrans(out []int16, k, n int, b []int8, ldb, j0 int) {
	kp := (k + 1) / 2
	for j := range i8NR {
		if j0+j >= n {
			for p := range kp {
				out[(p*i8NR+j)*2] = 0
				out[(p*i8NR+j)*2+1] = 0
			}
			continue
		}
		row := b[(j0+j)*ldb : (j0+j)*ldb+k]
		for p := range k / 2 {
			o := (*[2]int16)(out[(p*i8NR+j)*2:])
			o[0], o[1] = int16(row[2*p]), int16(row[2*p+1])
		}
		if k%2 == 1 {
			out[(k/2*i8NR+j)*2] = int16(row[k-1])
			out[(k/2*i8NR+j)*2+1] = 0
		}
	}
}

// packI8A widens rows [i0, i0+mc) and k-pairs [p0, p0+kc) of A into dst,
// row after row (2·kc values per row), zero-padding the odd last k and
// the rows up to the next multiple of i8MR.
func packI8A(dst []int16, a []int8, lda, k, i0, mc, p0, kc int) {
	k0 := 2 * p0
	w := min(2*kc, k-k0) // values inside K
	rows := (mc + i8MR - 1) / i8MR * i8MR
	for r := range rows {
		out := dst[r*2*kc : (r+1)*2*kc]
		if r >= mc {
			clear(out)
			continue
		}
		src := a[(i0+r)*lda+k0 : (i0+r)*lda+k0+w]
		t := 0
		if CPU.AVX2FMA {
			t = w &^ 15
			if t > 0 {
				i8Widen(&out[0], &src[0], t)
			}
		}
		for ; t < w; t++ {
			out[t] = int16(src[t])
		}
		clear(out[w:])
	}
}

// i8Kernel computes one i8MR×i8NR tile over kp k-pairs from packed A (row
// stride lda values) and B, storing it at c (row stride ldc) or adding it
// there.
func i8Kernel(kp int, a *int16, lda int, b *int16, c *int32, ldc int, accumulate bool) {
	if CPU.AVX2FMA {
		i8Kernel6x16AVX2(kp, a, lda, b, c, ldc, accumulate)
		return
	}
	i8KernelGo(kp, a, lda, b, c, ldc, accumulate)
}

// i8KernelGo is the pure-Go micro-kernel, on the same packed layout.
func i8KernelGo(kp int, a *int16, lda int, b *int16, c *int32, ldc int, accumulate bool) {
	as := unsafe.Slice(a, (i8MR-1)*lda+2*kp)
	bs := unsafe.Slice(b, kp*2*i8NR)
	var acc [i8MR][i8NR]int32
	for r := range i8MR {
		ar := as[r*lda : r*lda+2*kp]
		row := &acc[r]
		for p := range kp {
			a0, a1 := int32(ar[2*p]), int32(ar[2*p+1])
			bp := (*[2 * i8NR]int16)(bs[p*2*i8NR:])
			for j := range i8NR {
				row[j] += a0*int32(bp[2*j]) + a1*int32(bp[2*j+1])
			}
		}
	}
	cs := unsafe.Slice(c, (i8MR-1)*ldc+i8NR)
	for r := range i8MR {
		row := cs[r*ldc : r*ldc+i8NR]
		if accumulate {
			for j := range row {
				row[j] += acc[r][j]
			}
		} else {
			copy(row, acc[r][:])
		}
	}
}

// i16Buf is a pooled int16 workspace: packAPool holds the per-worker A
// blocks, packBPool GemmI8's packed B.
type i16Buf struct{ s []int16 }

var packAPool, packBPool sync.Pool

func getI16(pool *sync.Pool, n int) *i16Buf {
	if v, ok := pool.Get().(*i16Buf); ok && cap(v.s) >= n {
		v.s = v.s[:n]
		return v
	}
	return &i16Buf{s: make([]int16, n)}
}

// DequantI32 turns int32 accumulators into float32:
//
//	dst[i·ldd + j] = float32(acc[i·ldacc + j]) · (scaleA[i] · scaleB[j]) + bias[j]
//
// computed in float32, each product rounded (no fused multiply-add), for i
// < m and j < n. scaleA holds m per-row scales or one for all rows; scaleB
// holds n per-column scales or one for all columns; bias is nil (no bias)
// or holds n values. float32(acc) is exact for |acc| ≤ 2^24 and rounds to
// nearest even above. With AVX2 the rows run in assembly, bit for bit the
// same.
func DequantI32(m, n int, dst []float32, ldd int, acc []int32, ldacc int, scaleA, scaleB, bias []float32) {
	if (len(scaleA) != m && len(scaleA) != 1) || (len(scaleB) != n && len(scaleB) != 1) || (bias != nil && len(bias) != n) {
		panic(fmt.Sprintf("kernels.DequantI32: m=%d n=%d with %d row scales, %d column scales, %d biases",
			m, n, len(scaleA), len(scaleB), len(bias)))
	}
	if m == 0 || n == 0 {
		return
	}
	_, _ = dst[(m-1)*ldd+n-1], acc[(m-1)*ldacc+n-1]
	ParallelFor(m, max(1, (1<<15)/n), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sa := scaleA[0]
			if len(scaleA) == m {
				sa = scaleA[i]
			}
			dequantRow(dst[i*ldd:i*ldd+n], acc[i*ldacc:i*ldacc+n], sa, scaleB, bias)
		}
	})
}

// dequantRow does one row of DequantI32; sb has len(out) values or one.
func dequantRow(out []float32, in []int32, sa float32, sb, bias []float32) {
	n := len(out)
	k := 0
	if CPU.AVX2FMA {
		k = n &^ 7
		if k > 0 {
			flags := 0
			if len(sb) == n {
				flags |= 1
			}
			var bp *float32
			if bias != nil {
				flags |= 2
				bp = &bias[0]
			}
			i8DequantRow(&out[0], &in[0], &sb[0], bp, sa, k, flags)
		}
	}
	in = in[:n]
	switch {
	case len(sb) != n && bias == nil:
		s := sa * sb[0]
		for j := k; j < n; j++ {
			out[j] = float32(in[j]) * s
		}
	case len(sb) != n:
		s := sa * sb[0]
		for j := k; j < n; j++ {
			out[j] = float32(float32(in[j])*s) + bias[j]
		}
	case bias == nil:
		for j := k; j < n; j++ {
			out[j] = float32(in[j]) * float32(sa*sb[j])
		}
	default:
		for j := k; j < n; j++ {
			out[j] = float32(float32(in[j])*float32(sa*sb[j])) + bias[j]
		}
	}
}
