package kernels

import (
	"fmt"
	"unsafe"
)

// Whole-operand packing, for a convolution whose GEMMs all multiply the
// same op(A) (the forward pass's filters of a group, one GEMM per sample
// and band): op(A) is packed once per call for the kernel those GEMMs run,
// instead of once per GEMM, and each GEMM reads its blocks in place
// (gemmBlockedA).
//
// Layout (packWholeA): kc slice by kc slice of the depth (the kernel's
// kc), each the M rows rounded up to whole mr panels packed as one mc×kc
// block would be, so the block of rows ic of the slice at depth pc starts
// at pc·roundUp(M, mr) + ic·kc — roundUp(M, mr)·K elements in all.

// wholeASize is the elements packWholeA writes for an M×K op(A).
func wholeASize[T Float](kn *gemmKernel[T], m, k int) int { return roundUp(m, kn.mr) * k }

// packWholeA packs op(A) of g (its M×K, alpha applied) into dst for kn;
// strip is widening scratch of max(kc, M) values for 16-bit operands.
func packWholeA[T Float](kn *gemmKernel[T], dst []T, a operand[T], g GemmArgs, strip []float32) {
	packWholeRows(kn, dst, a, g, 0, g.M, strip)
}

// packWholeRows packs rows i0 … i1−1 of op(A) (i0 a multiple of kn.mr)
// into their places of packWholeA's layout in dst, every depth slice.
func packWholeRows[T Float](kn *gemmKernel[T], dst []T, a operand[T], g GemmArgs, i0, i1 int, strip []float32) {
	mp := roundUp(g.M, kn.mr)
	step := kn.kcFor(g.K)
	for pc := 0; pc < g.K; pc += step {
		kc := min(step, g.K-pc)
		packA(kn, dst[pc*mp+i0*kc:], a, g.OffA, g.LdA, g.TransA, i0, i1-i0, pc, kc, T(g.Alpha), strip)
	}
}

// packFilters packs the filters the GEMMs of a forward or input-gradient
// call multiply, once per call, for the kernel they run (the one Gemm or
// GemmHalf would pick), into their region of the workspace (conv_ws.go):
// for the forward pass each group's K/G × C/G·R·S filters, for the input
// gradient each group's block of channels, transposed (block·R·S × K/G);
// K·C/G·R·S elements in all, each matrix's rows rounded up to whole mr
// panels.
func (j *convJob[T]) packFilters() {
	d := &j.d
	var z T
	if unsafe.Sizeof(z) == 4 {
		j.kn, j.jobs = any(&sgemm).(*gemmKernel[T]), any(&sgemmJobs).(*freeList[gemmJob[T]])
	} else {
		j.kn, j.jobs = any(&dgemmKernel).(*gemmKernel[T]), any(&dgemmJobs).(*freeList[gemmJob[T]])
	}
	if j.half {
		k := d.crs // the depth of the GEMMs these filters serve
		if j.kind == ConvGradInput {
			k = d.kg
		}
		if p := pairKernel(k); j.hb.BF16 && j.ha.BF16 && p != nil {
			j.kn = any(p).(*gemmKernel[T])
		}
	}
	ids := j.p.Groups
	j.aper = wholeASize(j.kn, d.kg, d.crs)
	if j.kind == ConvGradInput {
		ids *= j.blocks
		j.aper = wholeASize(j.kn, j.block*j.p.R*j.p.S, d.kg)
	}
	if ids*j.aper > len(j.apack) {
		panic(fmt.Sprintf("kernels.%s: packed filters of %d elements exceed their region of %d (convRows)", j.kind, ids*j.aper, len(j.apack)))
	}
	j.apack = j.apack[:ids*j.aper]
	if j.aper == 0 {
		return
	}
	panel := j.kn.mr * j.filterArgs(0).K // elements of one mr-row panel
	j.packPer = j.aper / panel
	if j.packPhase == nil {
		j.packPhase = j.packPanels
	}
	if j.kn.amx { // its panels are padded to whole tiles: one packer
		j.packPanels(0, ids*j.packPer)
		return
	}
	ParallelFor(ids*j.packPer, max(1, packPart/panel), j.packPhase)
}

// filters is the operand the filters are read from: b, or its 16-bit
// bits in a 16-bit call.
func (j *convJob[T]) filters() operand[T] {
	if j.half {
		return operand[T]{h: j.hb.Bits, bf16: j.hb.BF16}
	}
	return operand[T]{f: j.b}
}

// packPart is the fewest filter elements one worker of packFilters packs
// (a chosen, not tuned, size), so that small filters, as the stem's 64×27,
// pack on the caller alone.
var packPart = 1 << 15

// packPanels packs panels lo … hi−1 of packFilters' grid (filter matrix
// id's panel q at id·packPer + q; the panels past a short matrix's rows
// are empty), each over its whole depth, with a worker's own strip.
func (j *convJob[T]) packPanels(lo, hi int) {
	s := scratches.get()
	var strip []float32
	if j.half {
		strip = scratchView[float32](&s.strip, max(j.kn.kc, j.d.kg, j.d.crs))
	}
	mr, w := j.kn.mr, j.filters()
	for lo < hi {
		id := lo / j.packPer
		end := min(hi, (id+1)*j.packPer)
		g := j.filterArgs(id)
		i0, i1 := (lo-id*j.packPer)*mr, min(g.M, (end-id*j.packPer)*mr)
		if i0 < i1 {
			packWholeRows(j.kn, j.apack[id*j.aper:(id+1)*j.aper], w, g, i0, i1, strip)
		}
		lo = end
	}
	scratches.put(s)
}

// filterArgs is the op(A) of filter matrix id (packFilters).
func (j *convJob[T]) filterArgs(id int) GemmArgs {
	d := &j.d
	if j.kind == ConvForward {
		return GemmArgs{M: d.kg, K: d.crs, Alpha: 1, OffA: id * d.wg, LdA: d.crs}
	}
	g, blk := id/j.blocks, id%j.blocks
	c0, c1 := blk*j.block, min(d.cg, (blk+1)*j.block)
	rs := j.p.R * j.p.S
	return GemmArgs{TransA: true, M: (c1 - c0) * rs, K: d.kg, Alpha: 1, OffA: g*d.wg + c0*rs, LdA: d.crs}
}

// gemmW runs a GEMM whose op(A) is filter matrix id (packFilters: the
// group in the forward pass, group·blocks+block in the input gradient)
// against the packed filters.
func (j *convJob[T]) gemmW(a GemmArgs, id int, b operand[T], c []T) {
	j.gemmWOut(a, id, b, c, halfOut{})
}

// gemmWOut is gemmW that also narrows C to bfloat16 in out (out.bits
// nil: none), tile by tile, as gemmBlockedOut.
func (j *convJob[T]) gemmWOut(a GemmArgs, id int, b operand[T], c []T, out halfOut) {
	la, lb := len(j.b), len(b.f)
	if b.h != nil {
		la, lb = len(j.hb.Bits), len(b.h)
	}
	a.check("Gemm", la, lb, len(c))
	if a.M == 0 || a.N == 0 {
		return
	}
	gemmBlockedOut(j.kn, j.jobs, a, j.apack[id*j.aper:(id+1)*j.aper], operand[T]{}, b, nil, c, out)
}
