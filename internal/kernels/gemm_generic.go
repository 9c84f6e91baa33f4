package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// The blocked GEMM driver, after Goto and van de Geijn's layering (as in
// BLIS): op(B) is packed into kc-deep slices of nr-wide panels, op(A)
// into mc×kc blocks of mr-tall panels, and the micro-kernel sweeps mr×nr
// tiles of C, so that one B panel (kc·nr values) stays in L1 while the A
// block streams from L2. The micro-kernel and block sizes are parameters,
// so the float32 assembly kernel, its pure-Go twin and the float64 kernel
// share this code.
//
// Threading, in one of two modes per call:
//
//   - shared: the matrices of the batch are done one after another. For
//     each block of up to nc columns, the workers first pack the whole
//     K×nc block of op(B) together (pack tasks), then take compute tasks,
//     each a chunk of C's rows (and, when M is short, of its columns),
//     packing their own rows of op(A) against the shared B. When C's
//     columns are split into chunks, or into more than one block, op(A)
//     is instead packed once per matrix by pack tasks of the first
//     block (its rows, a row chunk per task) into a shared buffer in
//     packWholeA's layout, and every column chunk reads it there; this
//     when it holds at most gemmABudget values, else each compute task
//     packs its rows again. Both kinds of task come from one
//     ParallelFor; compute tasks wait for the packing, yielding a few
//     times and then asleep until the slice's last pack task wakes them
//     (yielding only, a waiting task held its core for as long as the
//     packer's thread was off its core: on a shared machine 2–3.4 times
//     the processor time of a forward conv GEMM, for the same wall time).
//   - batch: with many independent matrices, each task is one whole
//     matrix, packed privately into its worker's scratch.
//
// Tasks are claimed from an atomic counter rather than dealt out, so a
// worker that is slow (its core busy with another process) simply takes
// fewer; a range that ParallelFor runs late finds nothing left and returns.
// Which worker runs a task never changes the arithmetic: tiles sit on one
// grid (multiples of mr and nr) whatever the split, so every element of C
// goes through the same operations for a given shape, however many
// workers share the call. Results are deterministic.
//
// Memory, kept between calls for reuse (CPU implementation scratch, like
// a stack; not tensor memory and not seen by the device allocator): each
// job in flight holds the shared B block, at most gemmBBudget values
// (8 MiB for float32), and the shared A, at most gemmABudget (4 MiB);
// each worker's scratch holds an mc×kc A block, a
// kc×nc B block for batch mode (at most gemmBatchB values: 3 MiB of
// float32) and a tile.

// gemmKernel is a micro-kernel and the blocking that feeds it.
type gemmKernel[T Float] struct {
	name       string
	mr, nr     int // C tile per call
	mc, kc, nc int // packed block sizes; mc a multiple of mr, nc of nr
	// full computes one whole mr×nr tile at c (row stride ldc) from packed
	// panels a (k·mr values) and b (k·nr): mode 0 stores A·B, mode 1 adds
	// it to C and mode 2 stores A·B + beta·C.
	full func(k int, a, b, c []T, ldc int, beta T, mode int)
	// half, when set, is full for the first mr/2 rows of the tile only
	// (panels as for full): edge tiles with at most mr/2 rows use it, so
	// that a short last row panel does not cost a whole tile.
	half func(k int, a, b, c []T, ldc int, beta T, mode int)
	// narrow, when set, is full for the first nr/2 columns only: edge
	// tiles with at most nr/2 columns use it.
	narrow func(k int, a, b, c []T, ldc int, beta T, mode int)
	// Packers of whole panels from T sources (nil: generic loops). packA
	// turns mr rows of k values, ld apart from src[at:], into k groups of
	// mr times alpha; packAT copies k rows of mr values, ld apart, into k
	// groups of mr times alpha; packB copies k rows of nr values, ld apart,
	// into k groups of nr; packBT turns nr runs of k values, ld apart, into
	// k groups of nr.
	packA, packAT func(dst, src []T, at, ld, k int, alpha T)
	packB, packBT func(dst, src []T, at, ld, k int)
	// pairs marks a bfloat16 pair kernel (gemm_bf16.go): its panels hold
	// pairs of bfloat16 depth values, packed from bfloat16 operands only,
	// with alpha 1.
	pairs bool
	// amx marks the AMX kernel (gemm_amx.go): pair panels with depth
	// padded to 16-pair steps and A in its row-major step order.
	amx bool
	// fullAt, when set (the AMX kernel), is full with the tile's mr rows
	// of A read in place from bfloat16 bits, row r's depth p at
	// h[at + r·ld + p], k a multiple of 32: the driver then packs no
	// whole row panel of a non-transposed A whose slices are that deep.
	fullAt func(k int, h []uint16, at, ld int, b, c []T, ldc int, beta T, mode int)
	// fullBias, when set (the AMX kernel), stores a whole tile of beta-0
	// GemmBias: the sums start from the row bias in every row, as full's
	// mode 1 does from C after the driver copied bias into each row; A
	// read in place from h as fullAt's when h is not nil, else panel a.
	fullBias func(k int, h []uint16, at, ld int, a, b, bias, c []T, ldc int)
	// tiles, when set, computes a run of whole tiles in one call
	// (tileRun): the AMX kernel's take every block of macro's (what
	// tileRows does not decline), a call for each row of its whole tiles;
	// any other kernel's take blocks of packed A without a bfloat16 out
	// (runsTiles), a call down each column of whole tiles when tilesDown
	// (tileCol, bias too), else across each row (no bias).
	tiles     func(t tileRun[T])
	tilesDown bool
}

// The pure-Go kernels: the float32 twin of the assembly kernel's 6×16
// shape, and the float64 kernel.
var (
	sgemmGoKernel = gemmKernel[float32]{name: "go-6x16", mr: 6, nr: 16, mc: 96, kc: 256, nc: 2048,
		full: sgemmGo, packA: packRows6[float32], packBT: packCols16[float32]}
	dgemmKernel = gemmKernel[float64]{name: "go-6x8", mr: 6, nr: 8, mc: 96, kc: 256, nc: 1024,
		full: dgemmGo, packA: packRows6[float64], packBT: packCols8x8[float64]}
)

// sgemm is the float32 kernel chosen for this machine.
var sgemm = selectSgemm()

func sgemmGo(k int, a, b, c []float32, ldc int, beta float32, mode int) {
	microGo(6, 16, k, a, b, c, ldc, beta, mode)
}

func dgemmGo(k int, a, b, c []float64, ldc int, beta float64, mode int) {
	microGo(6, 8, k, a, b, c, ldc, beta, mode)
}

// microGo is the pure-Go micro-kernel for an mr×nr tile (mr a multiple of
// 3, nr even), computed as 3×2 blocks: six sums, three values of A and two
// of B fit the 15 usable X registers, so the sums stay in registers across
// the k loop (a 2×4 block spilled and ran at half the speed).
//
// Like the assembly it stands in for, it is not instrumented by the race
// detector: it reads only its worker's packed scratch and writes a C tile
// that no other task touches, and instrumenting every load made the race
// run of the noasm build's tests over ten times slower.
//
//go:norace
func microGo[T Float](mr, nr, k int, a, b, c []T, ldc int, beta T, mode int) {
	microGoRows(mr, mr, nr, k, a, b, c, ldc, beta, mode)
}

// microGoRows is microGo for the first rows rows of the tile (rows a
// multiple of 3, at most mr), the A panel still mr values per k.
//
//go:norace
func microGoRows[T Float](mr, rows, nr, k int, a, b, c []T, ldc int, beta T, mode int) {
	a, b = a[:mr*k], b[:nr*k]
	for i := 0; i < rows; i += 3 {
		for j := 0; j < nr; j += 2 {
			var c00, c01, c10, c11, c20, c21 T
			ai, bj := i, j
			for range k {
				ap := a[ai : ai+3 : ai+3]
				bp := b[bj : bj+2 : bj+2]
				b0, b1 := bp[0], bp[1]
				a0 := ap[0]
				c00 += a0 * b0
				c01 += a0 * b1
				a1 := ap[1]
				c10 += a1 * b0
				c11 += a1 * b1
				a2 := ap[2]
				c20 += a2 * b0
				c21 += a2 * b1
				ai += mr
				bj += nr
			}
			storePair(c[i*ldc+j:], c00, c01, beta, mode)
			storePair(c[(i+1)*ldc+j:], c10, c11, beta, mode)
			storePair(c[(i+2)*ldc+j:], c20, c21, beta, mode)
		}
	}
}

func storePair[T Float](c []T, v0, v1, beta T, mode int) {
	c = c[:2:2]
	switch mode {
	case 0:
		c[0], c[1] = v0, v1
	case 1:
		c[0] += v0
		c[1] += v1
	default:
		c[0] = v0 + beta*c[0]
		c[1] = v1 + beta*c[1]
	}
}

// kcFor is the depth of the kc slices a product of depth k is cut into:
// the fewest slices of at most kn.kc, made as even as multiples of 8
// allow (1024 with kc 384: three slices of 344, 344 and 336, not 384,
// 384 and 256), so that no short last slice pays a whole pass over C for
// little work. packWholeA and the driver both cut by it.
func (kn *gemmKernel[T]) kcFor(k int) int {
	if !gemmEvenDepth || k <= kn.kc {
		return kn.kc
	}
	return min(kn.kc, roundUp(ceilDiv(k, ceilDiv(k, kn.kc)), kn.depthStep()))
}

// depthStep is the multiple kcFor rounds slices to: 8, or the AMX
// kernel's 32-deep step, so that a depth of whole steps is cut into
// slices of whole steps (1056 with kc 512: 352, 352 and 352), each read
// in place (fullAt) and summed as one unsliced product would be.
func (kn *gemmKernel[T]) depthStep() int {
	if kn.amx {
		return 32
	}
	return 8
}

// gemmEvenDepth turns kcFor's even slices on (a variable so that the
// benchmarks can compare with fixed kc slices: false).
var gemmEvenDepth = true

// gemmJob is one blocked GEMM call in flight. Jobs are reused, and the
// phase functions handed to ParallelFor are built once per job, so a call
// in steady state allocates nothing.
type gemmJob[T Float] struct {
	kern        *gemmKernel[T]
	g           GemmArgs
	a, b        operand[T]
	c           []T
	bias        []T     // GemmBias's bias, or nil
	apack       []T     // op(A) packed whole: by packWholeA, or by the job (aOwn); or nil
	bIn         []T     // op(B) packed whole by the caller (wholeBSize's layout), or nil
	aOwn        bool    // apack is the job's shared A (abuf), packed by its pack tasks
	aAt         bool    // op(A)'s whole row panels are read in place (kern.fullAt; readsA)
	out         halfOut // where finished tiles of C are narrowed to bfloat16 (out.bits nil: nowhere)
	abuf        []byte  // backs the shared A
	alpha, beta T
	firstMode   int // mode of the first kc slice: 0, 1 or 2 as beta is 0, 1 or other
	kc          int // the call's depth step (kern.kcFor)

	next   atomic.Int64   // next task to claim in the current phase
	ntasks int            // tasks in the current phase
	packed []atomic.Int32 // shared mode: pack tasks finished, per kc slice
	nPack  int            // shared mode: pack tasks, numbered first
	aRows  int            // shared mode: A pack tasks per slice in this block (0: none)
	mu     sync.Mutex     // with ready: compute tasks that wait for a slice sleep here
	ready  sync.Cond

	// Shared mode: matrix bi, columns [jc, jc+nc) of C, op(B) packed into
	// bpack as ⌈K/kc⌉ slices of kc·ncPad values.
	bi, jc, nc, ncPad int
	bpack             []T
	bbuf              []byte
	bGroup, bGroups   int // B panels per pack task, pack tasks per slice
	rowChunks         int // compute tasks: chunks of M, in mr panels
	colChunks         int // compute tasks: chunks of nc, in nr panels

	sharedPhase, batchPhase func(lo, hi int)
}

// claim returns the next unclaimed task of the current phase, or -1.
func (j *gemmJob[T]) claim() int {
	if t := int(j.next.Add(1) - 1); t < j.ntasks {
		return t
	}
	return -1
}

// runPhase runs f's claim loop on parts workers (inline when 1).
func (j *gemmJob[T]) runPhase(ntasks, parts int, f func(lo, hi int)) {
	j.ntasks = ntasks
	j.next.Store(0)
	if parts <= 1 || ntasks <= 1 {
		f(0, 1)
		return
	}
	ParallelFor(min(parts, ntasks), 1, f)
}

// sharedTasks runs the claim loop of one shared-mode block: tasks below
// nPack pack a group of B panels or a row chunk of the shared A, slice by
// slice, the rest compute. A
// compute task waits for each kc slice of B to be packed before it uses
// it (waitSlice); that cannot deadlock, because every pack task was
// claimed before any compute task and a claimed pack task is always being
// run by a goroutine that is not waiting, which wakes the sleepers when it
// finishes a slice's last one.
func (j *gemmJob[T]) sharedTasks(_, _ int) {
	var s *gemmScratch
	for t := j.claim(); t >= 0; t = j.claim() {
		if s == nil {
			s = scratches.get()
		}
		if t < j.nPack {
			j.packTask(s, t)
			if j.packed[t/j.perSlice()].Add(1) == int32(j.perSlice()) {
				j.mu.Lock()
				j.ready.Broadcast()
				j.mu.Unlock()
			}
			continue
		}
		j.computeTask(s, t-j.nPack)
	}
	if s != nil {
		scratches.put(s)
	}
}

// perSlice is the pack tasks of one kc slice: bGroups of B, then aRows
// of A.
func (j *gemmJob[T]) perSlice() int { return j.bGroups + j.aRows }

// packTask packs bGroup panels of one kc slice of the shared B block, or
// one row chunk of that slice of the shared A.
func (j *gemmJob[T]) packTask(s *gemmScratch, t int) {
	g, kn := &j.g, j.kern
	si, q := t/j.perSlice(), t%j.perSlice()
	pc := si * j.kc
	kc := min(j.kc, g.K-pc)
	if q >= j.bGroups {
		j.packRows(s, q-j.bGroups, pc, kc)
		return
	}
	q0 := q * j.bGroup
	j0 := q0 * kn.nr
	ncols := min(j.bGroup*kn.nr, j.nc-j0)
	var strip []float32
	if j.b.h != nil {
		strip = scratchView[float32](&s.strip, max(kc, kn.nr))
	}
	dst := j.bpack[si*j.kc*j.ncPad+j0*kc:]
	packB(kn, dst, j.b, g.OffB+j.bi*g.StrideB, g.LdB, g.TransB, pc, kc, j.jc+j0, ncols, strip)
}

// waitSlice returns when kc slice si of the block is packed: it yields
// gemmWaitSpins times, then sleeps until the last pack task of the slice
// wakes it (gemmWaitSpins < 0: yields until then).
func (j *gemmJob[T]) waitSlice(si int) {
	done, want := &j.packed[si], int32(j.perSlice())
	for n := 0; done.Load() < want; n++ {
		if gemmWaitSpins >= 0 && n >= gemmWaitSpins {
			j.mu.Lock()
			for done.Load() < want {
				j.ready.Wait()
			}
			j.mu.Unlock()
			return
		}
		runtime.Gosched()
	}
}

// gemmWaitSpins is how many times a compute task yields before it sleeps
// waiting for a slice of B (a variable for the benchmarks).
var gemmWaitSpins = 50

// packRows packs rows chunk rc of the kc slice at depth pc of op(A) into
// the shared A (packWholeA's layout).
func (j *gemmJob[T]) packRows(s *gemmScratch, rc, pc, kc int) {
	g, kn := &j.g, j.kern
	m0, m1 := j.rowRange(rc)
	if m0 >= m1 {
		return
	}
	var strip []float32
	if j.a.h != nil {
		strip = scratchView[float32](&s.strip, max(kc, m1-m0))
	}
	dst := j.apack[pc*roundUp(g.M, kn.mr)+m0*kc:]
	packA(kn, dst, j.a, g.OffA+j.bi*g.StrideA, g.LdA, g.TransA, m0, m1-m0, pc, kc, j.alpha, strip)
}

// rowRange returns the rows [m0, m1) of row chunk rc: whole mr panels,
// the chunks as even as they can be.
func (j *gemmJob[T]) rowRange(rc int) (m0, m1 int) {
	mr := j.kern.mr
	rp := ceilDiv(j.g.M, mr)
	return rc * rp / j.rowChunks * mr, min((rc+1)*rp/j.rowChunks*mr, j.g.M)
}

// computeTask computes a chunk of rows × a chunk of columns of the current
// block of C against the shared packed B.
func (j *gemmJob[T]) computeTask(s *gemmScratch, t int) {
	g, kn := &j.g, j.kern
	mr, nr := kn.mr, kn.nr
	rc, cc := t/j.colChunks, t%j.colChunks
	cp := j.ncPad / nr
	m0, m1 := j.rowRange(rc)
	q0, q1 := cc*cp/j.colChunks, (cc+1)*cp/j.colChunks
	n0, n1 := q0*nr, min(q1*nr, j.nc)
	if m0 >= m1 || n0 >= n1 {
		return
	}
	kcMax := min(j.kc, g.K)
	mcMax := roundUp(min(kn.mc, m1-m0), mr)
	pa := scratchView[T](&s.a, mcMax*kcMax)
	tmp := scratchView[T](&s.tile, mr*nr)
	var strip []float32
	if j.a.h != nil {
		strip = scratchView[float32](&s.strip, max(kcMax, mcMax))
	}
	oa, oc := g.OffA+j.bi*g.StrideA, g.OffC+j.bi*g.StrideC+j.jc+n0
	for pc := 0; pc < g.K; pc += j.kc {
		kc := min(j.kc, g.K-pc)
		mode := 1
		if pc == 0 {
			mode = j.firstMode
		}
		j.waitSlice(pc / j.kc)
		pb := j.bpack[pc*j.ncPad+n0*kc:]
		for ic := m0; ic < m1; ic += kn.mc {
			mc := min(kn.mc, m1-ic)
			j.macro(j.blockA(pa, oa, ic, mc, pc, kc, strip), j.aAtBlock(oa, ic, pc), pb, tmp, kc, mc, n1-n0, oc+ic*g.LdC, mode, j.biasAt(pc, j.jc+n0), pc+kc == g.K)
		}
	}
}

// readsA says whether the call reads op(A)'s whole row panels in place:
// a kernel with fullAt, a bfloat16 A not transposed and not prepacked,
// and every kc slice a whole number of 32-deep steps.
func (j *gemmJob[T]) readsA() bool {
	return gemmAInPlace && j.kern.fullAt != nil && j.a.h != nil && j.a.bf16 && !j.g.TransA && j.apack == nil &&
		j.kc%32 == 0 && j.g.K%32 == 0
}

// gemmAInPlace turns readsA on (a variable so that the benchmarks can
// compare with every panel packed: false).
var gemmAInPlace = true

// aAtBlock is where the block of op(A) at (ic, pc) starts in A's bits
// when its panels are read in place (aAt), else -1.
func (j *gemmJob[T]) aAtBlock(oa, ic, pc int) int {
	if !j.aAt {
		return -1
	}
	return oa + ic*j.g.LdA + pc
}

// blockA returns the packed mc×kc block of op(A) at (ic, pc): a view of
// the prepacked A (packWholeA's layout) when the call has one, else pa,
// packed now.
func (j *gemmJob[T]) blockA(pa []T, oa, ic, mc, pc, kc int, strip []float32) []T {
	if j.apack != nil {
		return j.apack[pc*roundUp(j.g.M, j.kern.mr)+ic*kc:]
	}
	if j.aAt { // only a last, short row panel is packed, in its place
		mr := j.kern.mr
		if q := mc / mr * mr; q < mc {
			packA(j.kern, pa[q*kc:], j.a, oa, j.g.LdA, false, ic+q, mc-q, pc, kc, j.alpha, strip)
		}
		return pa
	}
	packA(j.kern, pa, j.a, oa, j.g.LdA, j.g.TransA, ic, mc, pc, kc, j.alpha, strip)
	return pa
}

// batchTasks runs whole matrices of the batch, packing privately.
func (j *gemmJob[T]) batchTasks(_, _ int) {
	var s *gemmScratch
	for t := j.claim(); t >= 0; t = j.claim() {
		if s == nil {
			s = scratches.get()
		}
		j.matrix(s, t)
	}
	if s != nil {
		scratches.put(s)
	}
}

// matrix computes C matrix bi on one goroutine, packing op(B) one kc×nc
// block at a time into the worker's scratch.
func (j *gemmJob[T]) matrix(s *gemmScratch, bi int) {
	g, kn := &j.g, j.kern
	mr, nr := kn.mr, kn.nr
	oa, ob, oc := g.OffA+bi*g.StrideA, g.OffB+bi*g.StrideB, g.OffC+bi*g.StrideC
	kcMax := min(j.kc, g.K)
	mcMax := roundUp(min(kn.mc, g.M), mr)
	step := min(kn.nc, max(nr, gemmBatchB/kcMax/nr*nr))
	ncMax := roundUp(min(step, g.N), nr)
	pa := scratchView[T](&s.a, mcMax*kcMax)
	pb := scratchView[T](&s.b, ncMax*kcMax)
	tmp := scratchView[T](&s.tile, mr*nr)
	var strip []float32
	if j.a.h != nil || j.b.h != nil {
		strip = scratchView[float32](&s.strip, max(kcMax, mcMax, nr))
	}
	for jc := 0; jc < g.N; jc += step {
		nc := min(step, g.N-jc)
		for pc := 0; pc < g.K; pc += j.kc {
			kc := min(j.kc, g.K-pc)
			packB(kn, pb, j.b, ob, g.LdB, g.TransB, pc, kc, jc, nc, strip)
			mode := 1
			if pc == 0 {
				mode = j.firstMode
			}
			for ic := 0; ic < g.M; ic += kn.mc {
				mc := min(kn.mc, g.M-ic)
				j.macro(j.blockA(pa, oa, ic, mc, pc, kc, strip), j.aAtBlock(oa, ic, pc), pb, tmp, kc, mc, nc, oc+ic*g.LdC+jc, mode, j.biasAt(pc, jc), pc+kc == g.K)
			}
		}
	}
}

// macro runs the micro-kernel over the mc×nc block of C at c[co:]. Edge
// tiles are computed whole into tmp (the packed panels are zero-padded)
// and only their valid part is merged into C, except that a kernel with
// a narrow variant runs a tile of all mr rows and nr/2 columns in place.
// A non-nil bias (the block's columns of it, first K panel only: biasAt)
// first sets each tile to beta·C + bias, which the kernel then adds to
// (mode 1). With aAt ≥ 0 (aAtBlock) whole row panels of A are read in
// place from there, and only a short last one from pa. In the last kc
// slice (last) each finished tile is also narrowed to the job's
// bfloat16 out, if any, while it is in L1. A kernel with tiles computes
// the block's whole tiles in runs where runsTiles allows: each row of
// them in one call first (tileRows), or, with tilesDown, each column's
// in one call before that column's edge tiles (tileCol).
func (j *gemmJob[T]) macro(pa []T, aAt int, pb, tmp []T, kc, mc, nc, co, mode int, bias []T, last bool) {
	mr, nr := j.kern.mr, j.kern.nr
	runs := j.runsTiles(aAt, bias, last)
	down := runs && j.kern.tilesDown
	ir0, jr0 := 0, 0 // the whole tiles done by rows: rows [0, ir0) × columns [0, jr0)
	if runs && !down {
		ir0, jr0 = j.tileRows(pa, aAt, pb, tmp, kc, mc, nc, co, mode, bias, last)
	}
	for jr := 0; jr < nc; jr += nr {
		ir := 0 // the first row of this column left to do tile by tile
		switch {
		case jr < jr0:
			ir = ir0
		case down && jr+nr <= nc:
			ir = j.tileCol(pa, pb, kc, mc, jr, co, mode, bias)
		}
		for ; ir < mc; ir += mr {
			j.macroTile(pa, aAt, pb, tmp, kc, ir, jr, min(mr, mc-ir), min(nr, nc-jr), co, mode, bias, last)
		}
	}
}

// macroTile is one tile of macro, rows × cols of it valid, at (ir, jr)
// in the block.
func (j *gemmJob[T]) macroTile(pa []T, aAt int, pb, tmp []T, kc, ir, jr, rows, cols, co, mode int, bias []T, last bool) {
	mr, nr := j.kern.mr, j.kern.nr
	bp := pb[jr*kc : (jr+nr)*kc]
	at := co + ir*j.g.LdC + jr
	if mode == 0 && last && j.out.bits != nil && rows == mr && cols == nr {
		j.tileOut(pa, aAt, ir, kc, bp, bias, jr, tmp, at)
		return
	}
	switch {
	case bias != nil && mode == 0 && rows == mr && cols == nr && j.kern.fullBias != nil:
		j.tileBias(pa[ir*kc:(ir+mr)*kc], aAt, ir, kc, bp, bias[jr:], at)
	case bias != nil:
		mergeTile(j.c, at, j.g.LdC, rows, bias[jr:], 0, cols, j.beta, mode)
		mode = 1
		fallthrough
	default:
		j.tileOf(pa, aAt, ir, kc, bp, tmp, at, rows, cols, mode)
	}
	if last && j.out.bits != nil {
		narrowTileFrom(j.out.bits, j.outAt(at), j.out.ld, as[float32](j.c[at:]), j.g.LdC, rows, cols)
	}
}

// tileOut is a whole tile of a one-slice, beta-0 product with a bfloat16
// out: computed into tmp (L1) and narrowed from there to out, so that
// the float32 C is never written.
func (j *gemmJob[T]) tileOut(pa []T, aAt, ir, kc int, bp, bias []T, jr int, tmp []T, at int) {
	kn := j.kern
	mr, nr := kn.mr, kn.nr
	ap := pa[ir*kc : (ir+mr)*kc]
	h, ha := []uint16(nil), 0
	if aAt >= 0 {
		h, ha = j.a.h, aAt+ir*j.g.LdA
	}
	mode := 0
	switch {
	case bias != nil && kn.fullBias != nil:
		kn.fullBias(kc, h, ha, j.g.LdA, ap, bp, bias[jr:], tmp, nr)
	case bias != nil:
		mergeTile(tmp, 0, nr, mr, bias[jr:], 0, nr, 0, 0)
		mode = 1
		fallthrough
	default:
		if h != nil {
			kn.fullAt(kc, h, ha, j.g.LdA, bp, tmp, nr, 0, mode)
		} else {
			kn.full(kc, ap, bp, tmp, nr, 0, mode)
		}
	}
	narrowTileFrom(j.out.bits, j.outAt(at), j.out.ld, as[float32](tmp), nr, mr, nr)
}

// tileOf is one tile of macro at c[at:], rows × cols of it valid: A read
// in place (aAt ≥ 0) when it has all mr rows, else from its packed panel.
func (j *gemmJob[T]) tileOf(pa []T, aAt, ir, kc int, bp, tmp []T, at, rows, cols, mode int) {
	mr := j.kern.mr
	if rows == mr && aAt >= 0 {
		j.tileAt(aAt+ir*j.g.LdA, kc, bp, tmp, at, cols, mode)
	} else {
		j.tile(pa[ir*kc:(ir+mr)*kc], bp, tmp, kc, at, rows, cols, mode)
	}
}

// tileBias is a whole tile of beta-0 GemmBias on kern.fullBias, its A
// read in place when aAt ≥ 0.
func (j *gemmJob[T]) tileBias(ap []T, aAt, ir, kc int, bp, bias []T, at int) {
	if aAt >= 0 {
		j.kern.fullBias(kc, j.a.h, aAt+ir*j.g.LdA, j.g.LdA, nil, bp, bias, j.c[at:], j.g.LdC)
		return
	}
	j.kern.fullBias(kc, nil, 0, 0, ap, bp, bias, j.c[at:], j.g.LdC)
}

// tile is one tile of C at c[at:] from packed panels ap and bp, rows ×
// cols of it valid (macro).
func (j *gemmJob[T]) tile(ap, bp, tmp []T, kc, at, rows, cols, mode int) {
	kn := j.kern
	mr, nr, ldc, c := kn.mr, kn.nr, j.g.LdC, j.c
	if rows == mr && cols == nr {
		kn.full(kc, ap, bp, c[at:], ldc, j.beta, mode)
		return
	}
	if rows == mr && cols == nr/2 && kn.narrow != nil && mode != 2 {
		// In place, as mergeTile would (which rounds
		// acc + beta·C twice: mode 2 stays there).
		kn.narrow(kc, ap, bp, c[at:], ldc, j.beta, mode)
		return
	}
	if cols <= nr/2 && kn.narrow != nil {
		kn.narrow(kc, ap, bp, tmp, nr, 0, 0)
	} else if rows <= mr/2 && kn.half != nil {
		kn.half(kc, ap, bp, tmp, nr, 0, 0)
	} else {
		kn.full(kc, ap, bp, tmp, nr, 0, 0)
	}
	mergeTile(c, at, ldc, rows, tmp, nr, cols, j.beta, mode)
}

// tileAt is one tile of all mr rows with A read in place from a's bits at
// aAt: into C when it has all nr columns, else into tmp and merged.
func (j *gemmJob[T]) tileAt(aAt, kc int, bp, tmp []T, at, cols, mode int) {
	kn, ldc := j.kern, j.g.LdC
	if cols == kn.nr {
		kn.fullAt(kc, j.a.h, aAt, j.g.LdA, bp, j.c[at:], ldc, j.beta, mode)
		return
	}
	kn.fullAt(kc, j.a.h, aAt, j.g.LdA, bp, tmp, kn.nr, 0, 0)
	mergeTile(j.c, at, ldc, kn.mr, tmp, kn.nr, cols, j.beta, mode)
}

// mergeTile merges rows rows of cols values into C at c[at:] (row stride
// ldc) as mode says: 0 stores them, 1 adds them to C, 2 adds them to
// beta·C. Row r is src[r·ld:]; ld 0 repeats one row (a bias).
func mergeTile[T Float](c []T, at, ldc, rows int, src []T, ld, cols int, beta T, mode int) {
	for r := range rows {
		dst := c[at+r*ldc : at+r*ldc+cols]
		row := src[r*ld : r*ld+cols]
		switch mode {
		case 0:
			copy(dst, row)
		case 1:
			for x, v := range row {
				dst[x] += v
			}
		default:
			for x, v := range row {
				dst[x] = v + beta*dst[x]
			}
		}
	}
}

// Tuning, in multiply-adds or elements: below gemmSmall per matrix the
// direct loops beat packing; a parallel part should have at least
// gemmPart of work (waking a parked worker took 100–150 µs on the 2-core
// VM this was tuned on, so one core wins up to about 190³), and B is
// packed by several tasks from gemmPackPar
// values. Shared B blocks hold at most gemmBBudget values (K·nc), a
// batch-mode worker's B block at most gemmBatchB (kc·nc: nc shrinks when
// kc is deep, so that the worker's scratch stays what it was), a
// shared A at most gemmABudget (roundUp(M, mr)·K), compute
// aims at gemmTasksPer tasks per worker, and a row chunk keeps at least
// gemmMinRows rows so that each B panel brought into L1 serves several
// micro-kernel calls.
const (
	gemmSmall    = 10 * 10 * 10
	gemmPart     = 160 * 160 * 160
	gemmPackPar  = 1 << 15
	gemmBBudget  = 1 << 21
	gemmBatchB   = 384 * 2048
	gemmTasksPer = 4
	gemmMinRows  = 48
)

// gemmBlocked runs a validated, non-trivial GEMM (M, N, K > 0, alpha ≠ 0)
// through the packed path.
func gemmBlocked[T Float](kn *gemmKernel[T], jobs *freeList[gemmJob[T]], g GemmArgs, a, b operand[T], c []T) {
	gemmBlockedA(kn, jobs, g, nil, a, b, c)
}

// gemmBlockedA is gemmBlocked with op(A) prepacked in apack when it is not
// nil (then Batch must be 1 and a is not read).
func gemmBlockedA[T Float](kn *gemmKernel[T], jobs *freeList[gemmJob[T]], g GemmArgs, apack []T, a, b operand[T], c []T) {
	gemmBlockedBias(kn, jobs, g, apack, a, b, nil, c)
}

// gemmBlockedBias is gemmBlockedA with GemmBias's bias (nil: none).
func gemmBlockedBias[T Float](kn *gemmKernel[T], jobs *freeList[gemmJob[T]], g GemmArgs, apack []T, a, b operand[T], bias, c []T) {
	gemmBlockedOut(kn, jobs, g, apack, a, b, bias, c, halfOut{})
}

// blockCols is the most columns of C one shared-mode block takes for a
// depth of k: its packed B holds at most gemmBBudget values.
func (kn *gemmKernel[T]) blockCols(k int) int {
	step := kn.kcFor(k)
	return min(kn.nc, max(kn.nr, gemmBBudget/(ceilDiv(k, step)*step)/kn.nr*kn.nr))
}

// gemmBlockedOut is gemmBlockedBias that also narrows C to bfloat16 in
// out (out.bits nil: none; float32 C only), tile by tile as each is
// finished.
func gemmBlockedOut[T Float](kn *gemmKernel[T], jobs *freeList[gemmJob[T]], g GemmArgs, apack []T, a, b operand[T], bias, c []T, out halfOut) {
	gemmRun(kn, jobs, g, apack, nil, a, b, bias, c, out)
}

// halfOut is a bfloat16 matrix that a blocked GEMM narrows its finished
// tiles of C into: C's element (r, x) goes to bits[off + r·ld + x]. With
// ld = LdC every matrix of a batch goes to bits as it lies in C, shifted
// by off − OffC (bits indexed as c: GemmHalfBF16's case); with another ld
// the product must be one matrix (a convolution's y band, narrowed from
// the unit's float32 tile).
type halfOut struct {
	bits    []uint16
	off, ld int
}

// sameAs returns bits indexed as c of g's C.
func sameAs(g GemmArgs, bits []uint16) halfOut { return halfOut{bits: bits, off: g.OffC, ld: g.LdC} }

// outAt returns the index in j.out of C's element at c[at].
func (j *gemmJob[T]) outAt(at int) int {
	rel := at - j.g.OffC
	if j.out.ld == j.g.LdC {
		return j.out.off + rel
	}
	return j.out.off + rel/j.g.LdC*j.out.ld + rel%j.g.LdC
}

// gemmPackedB is gemmBlockedA with op(B) prepacked whole for kn in bpack
// (wholeBSize's layout, as a convolution's im2col writes it): Batch must
// be 1, and no B is packed. The arithmetic is that of packing the same
// op(B) in the call, bit for bit.
func gemmPackedB[T Float](kn *gemmKernel[T], jobs *freeList[gemmJob[T]], g GemmArgs, apack []T, a operand[T], bpack, c []T) {
	gemmPackedBOut(kn, jobs, g, apack, a, bpack, c, halfOut{})
}

// gemmPackedBOut is gemmPackedB that also narrows C to bfloat16 in out
// (out.bits nil: none), tile by tile, as gemmBlockedOut.
func gemmPackedBOut[T Float](kn *gemmKernel[T], jobs *freeList[gemmJob[T]], g GemmArgs, apack []T, a operand[T], bpack, c []T, out halfOut) {
	if max(g.Batch, 1) != 1 || len(bpack) < wholeBSize(kn, g.K, g.N) {
		panic("kernels: gemmPackedB needs one matrix and a whole packed B")
	}
	gemmRun(kn, jobs, g, apack, bpack, a, operand[T]{}, nil, c, out)
}

// gemmRun is the blocked path: gemmBlockedOut, with op(B) prepacked in
// bpack when it is not nil (gemmPackedB).
func gemmRun[T Float](kn *gemmKernel[T], jobs *freeList[gemmJob[T]], g GemmArgs, apack, bpack []T, a, b operand[T], bias, c []T, out halfOut) {
	batch := max(g.Batch, 1)
	work := g.M * g.N * g.K
	w := Workers()
	j := jobs.get()
	if j.sharedPhase == nil {
		j.sharedPhase, j.batchPhase = j.sharedTasks, j.batchTasks
		j.ready.L = &j.mu
	}
	j.kern, j.g, j.a, j.b, j.c, j.bias, j.apack, j.out = kn, g, a, b, c, bias, apack, out
	j.bIn = bpack
	j.kc = kn.kcFor(g.K)
	j.aAt = j.readsA()
	j.alpha, j.beta = T(g.Alpha), T(g.Beta)
	j.firstMode = betaMode(g.Beta)
	// C matrices that overlap (StrideC 0 accumulates into one C) must be
	// done in order; so must the batch when it is too short to share out.
	ordered := batch > 1 && g.StrideC < (g.M-1)*g.LdC+g.N
	if !ordered && batch >= 2*w && bpack == nil {
		j.runPhase(batch, min(w, batch*work/gemmPart), j.batchPhase)
	} else {
		parts := max(1, min(w, work/gemmPart))
		for bi := range batch {
			j.shared(bi, parts)
		}
	}
	j.a, j.b, j.c, j.bias, j.apack, j.aOwn, j.out = operand[T]{}, operand[T]{}, nil, nil, nil, false, halfOut{} // hold no caller memory
	j.bIn, j.bpack = nil, nil
	jobs.put(j)
}

// shared computes matrix bi in shared mode on up to parts workers.
func (j *gemmJob[T]) shared(bi, parts int) {
	g, kn := &j.g, j.kern
	mr, nr := kn.mr, kn.nr
	j.bi = bi
	slices := ceilDiv(g.K, j.kc)
	ncMax := kn.blockCols(g.K)
	if j.bIn != nil {
		ncMax = roundUp(g.N, nr) // one block, packed by the caller
	}
	// Compute tasks: at least one row chunk per mc rows; more, down to
	// gemmMinRows, to reach the task target; then columns; and a multiple
	// of parts in all, so the last round of tasks leaves no worker idle.
	rp := ceilDiv(g.M, mr)
	rows := ceilDiv(g.M, kn.mc)
	target := 1
	if parts > 1 {
		target = gemmTasksPer * parts
		rows = max(rows, min(target, g.M/gemmMinRows))
	}
	rows = min(rows, rp)
	for jc := 0; jc < g.N; jc += ncMax {
		j.jc, j.nc = jc, min(ncMax, g.N-jc)
		j.ncPad = roundUp(j.nc, nr)
		cp := j.ncPad / nr
		cols := min(cp, max(1, ceilDiv(target, rows)))
		r := rows
		for parts > 1 && r*cols%parts != 0 {
			if r < rp {
				r++
			} else if cols < cp {
				cols++
			} else {
				break
			}
		}
		j.rowChunks, j.colChunks = r, cols
		j.aRows = 0
		if jc == 0 && j.shareA(cols, ncMax) {
			j.aRows = r
		}
		j.packPlan(slices, cp, parts)
		j.nPack = slices * j.perSlice()
		if len(j.packed) < slices {
			j.packed = make([]atomic.Int32, slices)
		}
		for i := range slices {
			j.packed[i].Store(0)
		}
		j.runPhase(j.nPack+r*cols, parts, j.sharedPhase)
	}
}

// packPlan sets the current block's packed B and its pack tasks: groups
// of panels small enough to share out, or none when the caller packed B
// (bIn).
func (j *gemmJob[T]) packPlan(slices, cp, parts int) {
	if j.bIn != nil {
		j.bpack, j.bGroup, j.bGroups = j.bIn, cp, 0
		return
	}
	j.bpack = scratchView[T](&j.bbuf, slices*j.kc*j.ncPad)
	j.bGroup = cp
	if parts > 1 && j.g.K*j.ncPad >= gemmPackPar {
		j.bGroup = ceilDiv(cp, gemmTasksPer*parts)
	}
	j.bGroups = ceilDiv(cp, j.bGroup)
}

// shareA says whether the first block of the current matrix packs op(A)
// into the job's shared A (then apack is that buffer): when the call has
// no prepacked A, more than one column chunk (cols) or block of C
// (ncMax columns) would read it, and it fits gemmABudget.
func (j *gemmJob[T]) shareA(cols, ncMax int) bool {
	if j.apack != nil && !j.aOwn {
		return false // the caller's packWholeA
	}
	if j.aAt {
		return false // read in place
	}
	g := &j.g
	size := roundUp(g.M, j.kern.mr) * g.K
	if (cols == 1 && g.N <= ncMax) || size > gemmABudget {
		j.apack, j.aOwn = nil, false
		return false
	}
	j.apack, j.aOwn = scratchView[T](&j.abuf, size), true
	return true
}

// gemmABudget bounds the shared A (a variable so that the benchmarks can
// turn it off: 0).
var gemmABudget = 1 << 20

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func roundUp(a, b int) int { return ceilDiv(a, b) * b }
