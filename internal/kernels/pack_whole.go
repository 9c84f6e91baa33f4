package kernels

import "unsafe"

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
	mp := roundUp(g.M, kn.mr)
	for pc := 0; pc < g.K; pc += kn.kc {
		kc := min(kn.kc, g.K-pc)
		packA(kn, dst[pc*mp:], a, g.OffA, g.LdA, g.TransA, 0, g.M, pc, kc, T(g.Alpha), strip)
	}
}

// packFilters packs the forward pass's filters, group by group, for the
// kernel its GEMMs run (the one Gemm or GemmHalf would pick), into a
// reused Go-heap buffer of K/G·C/G·R·S·G elements, each group's rows
// rounded up to whole mr panels.
func (j *convJob[T]) packFilters() {
	d := &j.d
	w := operand[T]{f: j.b}
	var z T
	if unsafe.Sizeof(z) == 4 {
		j.kn, j.jobs = any(&sgemm).(*gemmKernel[T]), any(&sgemmJobs).(*freeList[gemmJob[T]])
	} else {
		j.kn, j.jobs = any(&dgemmKernel).(*gemmKernel[T]), any(&dgemmJobs).(*freeList[gemmJob[T]])
	}
	if j.half {
		w = operand[T]{h: j.hb.Bits, bf16: j.hb.BF16}
		if j.hb.BF16 && j.ha.BF16 && sbgemm != nil {
			j.kn = any(sbgemm).(*gemmKernel[T])
		}
	}
	j.aper = wholeASize(j.kn, d.kg, d.crs)
	j.apackBuf = convBufs.get()
	j.apack = scratchView[T](&j.apackBuf.b, j.p.Groups*j.aper)
	s := scratches.get()
	var strip []float32
	if j.half {
		strip = scratchView[float32](&s.strip, max(j.kn.kc, d.kg))
	}
	for g := range j.p.Groups {
		a := GemmArgs{M: d.kg, K: d.crs, Alpha: 1, OffA: g * d.wg, LdA: d.crs}
		packWholeA(j.kn, j.apack[g*j.aper:(g+1)*j.aper], w, a, strip)
	}
	scratches.put(s)
}

// releaseFilters gives back packFilters' buffer.
func (j *convJob[T]) releaseFilters() {
	convBufs.put(j.apackBuf)
	j.apack, j.apackBuf, j.kn, j.jobs = nil, nil, nil, nil
}

// gemmW runs a forward GEMM of group g, whose A is the group's filters,
// against the packed filters.
func (j *convJob[T]) gemmW(a GemmArgs, g int, b operand[T], c []T) {
	la, lb := len(j.b), len(b.f)
	if b.h != nil {
		la, lb = len(j.hb.Bits), len(b.h)
	}
	a.check("Gemm", la, lb, len(c))
	if a.M == 0 || a.N == 0 {
		return
	}
	gemmBlockedA(j.kn, j.jobs, a, j.apack[g*j.aper:(g+1)*j.aper], operand[T]{}, b, c)
}
