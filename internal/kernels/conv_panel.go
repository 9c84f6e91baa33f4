package kernels

import "unsafe"

// im2col straight into the GEMM's packed B, for float32 and float64 calls
// of the forward pass and the weight gradient. Without it a unit writes
// its whole im2col tile (C/G·R·S rows by the band's columns: up to a few
// MiB, past L2) and the GEMM then reads it back to copy it into its
// packed B panels. With it the unit writes the panels itself, in the
// layout the GEMM would have packed (wholeBSize's), and the GEMM packs no
// B (gemmPackedB): the im2col rows go through a small staging block that
// stays in L1 (convStage values, or nr rows for the weight gradient,
// whose B is the tile transposed) and are copied into the panels by the
// kernel's own packers. The panels hold the values the GEMM would have
// packed, so the results are the dense path's, bit for bit.
//
// Memory: a worker's tile grows by the panels' padding to whole columns of
// the widest kernel (convPanelNR; none when the band's columns are a
// multiple of it, as in ResNet's) and by the staging block at its end
// (convPlan.stageSize: forward max(convStage, band columns) values, weight
// gradient convPanelNR·band columns, 32 KiB for ResNet's 256 float32
// columns), all inside the workspace ConvWorkspace sizes.

// convPanels turns the panel path on (a variable so that the tests and
// benchmarks can compare it with the dense tile: false).
var convPanels = true

// convStage is the values of the forward pass's staging block: 16 KiB of
// float32, a third of an L1.
const convStage = 1 << 12

// stage returns the staging block at the end of a worker's tile (plan
// reserves stageSize values there).
func (j *convJob[T]) stage(tile []T) []T {
	return tile[len(tile)-j.stageSize(&j.p, &j.d):]
}

// floatGemm returns the kernel and jobs Gemm runs T on.
func floatGemm[T Float]() (*gemmKernel[T], *freeList[gemmJob[T]]) {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return any(&sgemm).(*gemmKernel[T]), any(&sgemmJobs).(*freeList[gemmJob[T]])
	}
	return any(&dgemmKernel).(*gemmKernel[T]), any(&dgemmJobs).(*freeList[gemmJob[T]])
}

// panels says whether the call builds its B panels from im2col directly.
func (j *convJob[T]) panels() bool {
	return convPanels && !j.half && j.kind != ConvGradInput
}

// colSize is the values a forward unit's B takes at the start of its
// tile for n columns: whole panels, or the dense tile.
func (j *convJob[T]) colSize(n int) int {
	if !j.panels() {
		return j.d.crs * n
	}
	kn, _ := floatGemm[T]()
	return wholeBSize(kn, j.d.crs, n)
}

// forwardGemm runs a forward unit's GEMM a (filters of group g) into c on
// the im2col matrix of its ns samples' band [oh0, oh1), x from the first
// sample's group: built in col (colSize values) as panels through stage
// (the tile's staging block), or densely.
func (j *convJob[T]) forwardGemm(a GemmArgs, g int, col, stage, x []T, ns, oh0, oh1 int, c []T) {
	a.LdB = a.N
	if !j.panels() {
		j.colRows(col, x, ns, 0, j.d.crs, oh0, oh1, a.N)
		j.gemmW(a, g, operand[T]{f: col}, c)
		return
	}
	j.colPanels(col, stage, x, ns, oh0, oh1, a.N)
	a.check("Gemm", len(j.b), len(col), len(c))
	gemmPackedB(j.kn, j.jobs, a, j.apack[g*j.aper:(g+1)*j.aper], operand[T]{}, col, c)
}

// colRows writes rows [r0, r1) of a unit's im2col matrix densely into
// col, n values a row (ns samples' band [oh0, oh1) side by side, x from
// the first sample's group): by permutation when the call has a table.
func (j *convJob[T]) colRows(col, x []T, ns, r0, r1, oh0, oh1, n int) {
	p, d := &j.p, &j.d
	if j.useUnperm {
		j.unperm.im2col(as[float32](col), as[float32](x), n, d.xs, ns, p.R*p.S, r0, r1)
		return
	}
	im2colSamples(p, j.taps, d, col, x, ns, r0, r1, oh0, oh1)
}

// colPanels writes a forward unit's im2col matrix (C/G·R·S rows by n
// columns, as colRows) into dst as a whole packed B for the float kernel,
// a block of rows at a time through stage.
func (j *convJob[T]) colPanels(dst, stage, x []T, ns, oh0, oh1, n int) {
	kn, _ := floatGemm[T]()
	k := j.d.crs
	np, step := roundUp(n, kn.nr), kn.kcFor(k)
	rows := max(1, min(len(stage), convStage)/n)
	for pc := 0; pc < k; pc += step {
		kc := min(step, k-pc)
		for r := 0; r < kc; r += rows {
			m := min(rows, kc-r)
			j.colRows(stage, x, ns, pc+r, pc+r+m, oh0, oh1, n)
			panelRows(kn, dst[pc*np+r*kn.nr:], stage, n, m, kc)
		}
	}
}

// panelRows copies m dense rows of n values from src into the panels of
// one kc-deep slice of a packed B, dst starting at the slice plus the
// rows' depth times nr; columns past n are zero.
func panelRows[T Float](kn *gemmKernel[T], dst, src []T, n, m, kc int) {
	b := operand[T]{f: src}
	for q := 0; q < n; q += kn.nr {
		packB(kn, dst[q*kc:], b, 0, n, false, 0, m, q, min(kn.nr, n-q), nil)
	}
}

// wgradGemm runs a weight-gradient GEMM a into dw over ns samples' band
// [oh0, oh1) and the im2col rows [r0, r1), x and dy from the first
// sample's group: on panels built from im2col (wgradPanels), or on the
// dense tile (wgradTile) when the call takes no panels or the product is
// small enough for Gemm's direct loops.
func (j *convJob[T]) wgradGemm(a GemmArgs, tile, dw, x, dy []T, ns, r0, r1, oh0, oh1 int) {
	nb := ns * (oh1 - oh0) * j.p.OW
	if !j.panels() || a.M*(r1-r0)*nb < gemmSmall {
		ga, gb := wgradTile(&j.p, j.taps, &j.d, j.permsOrNil(), &a, tile, x, dy, ns, r0, r1, oh0, oh1)
		Gemm(a, ga, gb, dw)
		return
	}
	kn, jobs := floatGemm[T]()
	ga, bp := j.wgradPanels(&a, tile, j.stage(tile)[:kn.nr*nb], x, dy, ns, r0, r1, oh0, oh1)
	a.check("Gemm", len(ga), len(bp), len(dw))
	gemmPackedB(kn, jobs, a, nil, operand[T]{f: ga}, bp, dw)
}

// wgradPanels builds the operands of a weight-gradient GEMM as wgradTile
// does, but with B (the im2col rows [r0, r1) transposed: depth nb, the
// band columns of ns samples) a whole packed B at the start of tile,
// built nr rows at a time in stage (nr·nb values); dy's rows, when
// ns > 1, follow it. It sets a's K and A's offset and stride.
func (j *convJob[T]) wgradPanels(a *GemmArgs, tile, stage, x, dy []T, ns, r0, r1, oh0, oh1 int) (ga, bp []T) {
	p, d := &j.p, &j.d
	kn, _ := floatGemm[T]()
	cols := (oh1 - oh0) * p.OW
	nb, nr := ns*cols, kn.nr
	bp = tile[:wholeBSize(kn, nb, r1-r0)]
	rest := tile[len(bp):]
	np, step := roundUp(r1-r0, nr), kn.kcFor(nb)
	src := operand[T]{f: stage}
	for q := r0; q < r1; q += nr {
		m := min(nr, r1-q)
		j.colRows(stage, x, ns, q, q+m, oh0, oh1, nb)
		for pc := 0; pc < nb; pc += step {
			kc := min(step, nb-pc)
			packB(kn, bp[pc*np+(q-r0)*kc:], src, 0, nb, true, pc, kc, 0, m, nil)
		}
	}
	a.K, a.OffA, a.LdA, a.OffB, a.LdB = nb, oh0*p.OW, d.ohw, 0, nb
	if ns == 1 {
		return dy, bp
	}
	ga = rest[:d.kg*nb]
	gatherSamples(ga, dy, d, ns, cols, oh0*p.OW)
	a.OffA, a.LdA = 0, nb
	return ga, bp
}
