package kernels

import (
	"encoding/binary"
	"unsafe"
)

// The INT8 GEMM's second layout, "quads", for CPUs with AVX512-VNNI.
// VPDPBUSD multiplies four unsigned bytes by four signed bytes in each
// 32-bit lane and adds the four products to the lane: 64 multiply-adds
// per ZMM instruction, four times VPMADDWD's 16 per YMM instruction.
// One operand must be unsigned, so B is stored with 128 added (b + 128 in
// 0..255) and the kernel subtracts the extra term from each row:
//
//	C[i][j] = Σk a[i][k]·(b[k][j] + 128) − 128·Σk a[i][k]
//
// Each product is at most 128·255 in magnitude and VPDPBUSD wraps (it
// does not saturate), so the sum is exact modulo 2^32; C itself lies in
// the int32 range for K ≤ MaxI8K, so the result is the exact integer sum,
// as in the pairs layout. Nothing about the range of A or B is assumed.
//
// Packed layouts (bytes, in the same []int16 storage as the pairs layout,
// which needs at least as many bytes):
//   - B: ⌈N/16⌉ panels of 16 columns; in a panel, for each k-quad q the 16
//     columns' four bytes b[4q..4q+3][j] + 128: 64 bytes per quad, one
//     ZMM load. Padding (k ≥ K or j ≥ N) holds 128, that is b = 0.
//   - A: blocks of up to i8MC rows by i8QKC quads, in groups of i8QMR
//     rows; in a group, for each quad the twelve rows' four bytes (48
//     bytes), which the kernel broadcasts with VPDPBUSD's {1to16} operand.
//     Padding is 0. Packing also sums each row over the block: corr[r] =
//     128·Σ a[r][k], the term the kernel subtracts.

const (
	i8QMR = 12  // rows of the quads micro-kernel tile (columns: i8NR)
	i8QKC = 128 // k-quads per block (K = 512 values, as the pairs layout)
)

// i8ForceQuads makes GemmI8 use the quads layout even without VNNI (run
// by the pure-Go kernel); tests set it to check the layout on any CPU.
var i8ForceQuads bool

// i8UseQuads reports whether new packings use the quads layout.
func i8UseQuads() bool { return CPU.AVX512VNNI || i8ForceQuads }

// asBytes views packed int16 storage as bytes.
func asBytes(s []int16) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 2*len(s))
}

// i8Bytes views int8 values as bytes.
func i8Bytes(s []int8) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s))
}

// packI8BQuads packs k-quads [lo, hi) of the K×N row-major B (b[k·ldb +
// j]) into dst's panels of 16 columns.
func packI8BQuads(dst []byte, k, n int, b []int8, ldb, lo, hi int) {
	kq := (k + 3) / 4
	panelLen := kq * 4 * i8NR
	panels := (n + i8NR - 1) / i8NR
	full := n / i8NR
	var zero [i8NR]int8
	for q := lo; q < hi; q++ {
		var rows [4][]int8
		inside := true
		for t := range rows {
			if kk := 4*q + t; kk < k {
				rows[t] = b[kk*ldb : kk*ldb+n]
			} else {
				rows[t] = zero[:]
				inside = false
			}
		}
		j0 := 0
		if CPU.AVX2FMA && full > 0 && inside {
			i8PackBQuads(&dst[q*4*i8NR], &rows[0][0], &rows[1][0], &rows[2][0], &rows[3][0], full, panelLen)
			j0 = full * i8NR
		}
		for jp := j0 / i8NR; jp < panels; jp++ {
			o := dst[jp*panelLen+q*4*i8NR:][:4*i8NR]
			for j := range i8NR {
				jj := jp*i8NR + j
				for t := range 4 {
					v := byte(0x80)
					if jj < n && 4*q+t < k {
						v = byte(rows[t][jj]) ^ 0x80
					}
					o[4*j+t] = v
				}
			}
		}
	}
}

// packI8BQuadsTrans packs the panel of columns [j0, j0+16) of B stored N×K
// (B[k][j] = b[j·ldb + k]): column j's quads are consecutive bytes of row
// j of b.
func packI8BQuadsTrans(out []byte, k, n int, b []int8, ldb, j0 int) {
	kq := (k + 3) / 4
	for j := range i8NR {
		if j0+j >= n {
			for q := range kq {
				binary.LittleEndian.PutUint32(out[q*4*i8NR+4*j:], 0x80808080)
			}
			continue
		}
		row := i8Bytes(b[(j0+j)*ldb:][:k])
		for q := range k / 4 {
			v := binary.LittleEndian.Uint32(row[4*q:]) ^ 0x80808080
			binary.LittleEndian.PutUint32(out[q*4*i8NR+4*j:], v)
		}
		if k%4 != 0 {
			q := k / 4
			var w [4]byte
			for t := range w {
				w[t] = 0x80
				if 4*q+t < k {
					w[t] = row[4*q+t] ^ 0x80
				}
			}
			copy(out[q*4*i8NR+4*j:][:4], w[:])
		}
	}
}

// packI8AQuads packs rows [i0, i0+mc) and k-quads [q0, q0+kc) of A into
// dst in groups of i8QMR rows (see the file comment), zero-padding k
// beyond K and rows up to the next multiple of i8QMR, and sets corr[r] to
// 128 times row r's sum over the block.
func packI8AQuads(dst []byte, corr []int32, a []int8, lda, k, i0, mc, q0, kc int) {
	k0 := 4 * q0
	w := min(4*kc, k-k0) // values inside K
	rows := (mc + i8QMR - 1) / i8QMR * i8QMR
	for r := range rows {
		g, rr := r/i8QMR, r%i8QMR
		out := dst[g*kc*4*i8QMR+4*rr:]
		if r >= mc {
			for q := range kc {
				binary.LittleEndian.PutUint32(out[q*4*i8QMR:], 0)
			}
			corr[r] = 0
			continue
		}
		src := i8Bytes(a[(i0+r)*lda+k0:][:w])
		var sum int32
		q := 0
		for ; 4*q+4 <= w; q++ {
			v := binary.LittleEndian.Uint32(src[4*q:])
			binary.LittleEndian.PutUint32(out[q*4*i8QMR:], v)
			sum += int32(int8(v)) + int32(int8(v>>8)) + int32(int8(v>>16)) + int32(int8(v>>24))
		}
		for ; q < kc; q++ {
			var v uint32
			for t := range 4 {
				if x := 4*q + t; x < w {
					v |= uint32(src[x]) << (8 * t)
					sum += int32(int8(src[x]))
				}
			}
			binary.LittleEndian.PutUint32(out[q*4*i8QMR:], v)
		}
		corr[r] = 128 * sum
	}
}

// i8RectQuads computes rows [r0, r1) of C over column panels [p0, p1)
// from a B packed in quads: i8Rect for the quads layout.
func i8RectQuads(a []int8, lda int, b *PackedI8, c []int32, ldc, r0, r1, p0, p1 int) {
	buf := getI16(&packAPool, i8MC*i8QKC*2) // i8MC·i8QKC·4 bytes
	abuf := asBytes(buf.s)
	var corr [i8MC]int32
	var edge [i8QMR * i8NR]int32
	n, k := b.N, b.K
	kq := (k + 3) / 4
	panelLen := kq * 4 * i8NR
	panels := asBytes(b.panels)
	for ic := r0; ic < r1; ic += i8MC {
		mc := min(i8MC, r1-ic)
		for qc := 0; qc < kq; qc += i8QKC {
			kc := min(i8QKC, kq-qc)
			packI8AQuads(abuf, corr[:], a, lda, k, ic, mc, qc, kc)
			accumulate := qc > 0
			for jp := p0; jp < p1; jp++ {
				bp := panels[jp*panelLen+qc*4*i8NR:]
				j0 := jp * i8NR
				nr := min(i8NR, n-j0)
				for ir := 0; ir < mc; ir += i8QMR {
					ap := abuf[ir*kc*4:]
					mr := min(i8QMR, mc-ir)
					ci := (ic+ir)*ldc + j0
					if mr == i8QMR && nr == i8NR {
						i8KernelQuads(kc, &ap[0], &bp[0], &c[ci], ldc, &corr[ir], accumulate)
						continue
					}
					i8KernelQuadsRows(mr, kc, &ap[0], &bp[0], &edge[0], i8NR, &corr[ir])
					mergeI8Edge(c[ci:], ldc, edge[:], mr, nr, accumulate)
				}
			}
		}
	}
	packAPool.Put(buf)
}

// i8KernelQuads computes one i8QMR×i8NR tile over kq k-quads from packed A
// and B, minus corr per row, storing it at c (row stride ldc) or adding
// it there.
func i8KernelQuads(kq int, a, b *byte, c *int32, ldc int, corr *int32, accumulate bool) {
	if CPU.AVX512VNNI {
		i8KernelQuadsVNNI(kq, a, b, c, ldc, corr, accumulate)
		return
	}
	i8KernelQuadsGo(kq, a, b, c, ldc, corr, accumulate)
}

// i8KernelQuadsRows computes the first rows (1..i8QMR) of an edge tile
// into edge (row stride ldc): with at most six, only six rows of the group
// are computed, so a short last group does not cost a whole tile.
func i8KernelQuadsRows(rows, kq int, a, b *byte, edge *int32, ldc int, corr *int32) {
	switch {
	case rows > 6:
		i8KernelQuads(kq, a, b, edge, ldc, corr, false)
	case CPU.AVX512VNNI:
		i8KernelQuads6VNNI(kq, a, b, edge, ldc, corr, false)
	default:
		i8KernelQuadsGoRows(6, kq, a, b, edge, ldc, corr, false)
	}
}

// i8KernelQuadsGo is the pure-Go twin of the VNNI micro-kernel, on the
// same packed layout and with the same wrapping int32 arithmetic.
func i8KernelQuadsGo(kq int, a, b *byte, c *int32, ldc int, corr *int32, accumulate bool) {
	i8KernelQuadsGoRows(i8QMR, kq, a, b, c, ldc, corr, accumulate)
}

// i8KernelQuadsGoRows is i8KernelQuadsGo for the first rows rows of the
// group (the twin of i8KernelQuads6VNNI with rows = 6).
func i8KernelQuadsGoRows(rows, kq int, a, b *byte, c *int32, ldc int, corr *int32, accumulate bool) {
	as := unsafe.Slice(a, kq*4*i8QMR)
	bs := unsafe.Slice(b, kq*4*i8NR)
	cr := unsafe.Slice(corr, rows)
	var acc [i8QMR][i8NR]int32
	for q := range kq {
		ag := as[q*4*i8QMR : (q+1)*4*i8QMR]
		bg := bs[q*4*i8NR : (q+1)*4*i8NR]
		for r := range rows {
			a0, a1, a2, a3 := int32(int8(ag[4*r])), int32(int8(ag[4*r+1])), int32(int8(ag[4*r+2])), int32(int8(ag[4*r+3]))
			row := &acc[r]
			for j := range i8NR {
				row[j] += a0*int32(bg[4*j]) + a1*int32(bg[4*j+1]) + a2*int32(bg[4*j+2]) + a3*int32(bg[4*j+3])
			}
		}
	}
	cs := unsafe.Slice(c, (rows-1)*ldc+i8NR)
	for r := range rows {
		row := cs[r*ldc : r*ldc+i8NR]
		for j := range row {
			v := acc[r][j] - cr[r]
			if accumulate {
				v += row[j]
			}
			row[j] = v
		}
	}
}
