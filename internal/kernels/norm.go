package kernels

import (
	"math"
	"unsafe"
)

// Normalisation kernels. Statistics accumulate in float64 (two passes:
// the mean, then the squared deviations from it); each output is computed
// in float64 and rounded once. Work is split across the workers by rows
// (layer norm) or channels (batch norm), and the column sums of layer
// norm's weight gradient by columns, so that no value is summed by two
// workers and results do not depend on their number.

// normParallelMin is the number of elements from which a norm kernel is
// split across the workers (waking a parked worker costs 100–150 µs, a
// few hundred thousand elements of these loops), and normGrain the
// fewest elements a worker takes. (A variable so that the tests can split
// small calls too.)
var normParallelMin = 1 << 17

const normGrain = 1 << 15

// normFor runs f over [0, units) of size elements each, on the workers
// when the whole is large enough.
func normFor(units, size int, f func(lo, hi int)) {
	if units*size < normParallelMin || units < 2 {
		f(0, units)
		return
	}
	ParallelFor(units, max(1, normGrain/max(size, 1)), f)
}

// LayerNorm normalises each row of the contiguous x (rows, cols):
// y = (x - mean)·rstd·w + b with the row's mean and rstd = 1/√(var + eps)
// (biased variance), and stores mean and rstd (rows) for backward. w and b
// (cols) may be nil: weight 1, bias 0. Statistics are computed in float64
// (two passes) and y is computed from them before they are rounded to T
// for storage. Rows are split across the workers.
func LayerNorm[T Float](y, x, w, b []T, mean, rstd []T, rows, cols int, eps float64) {
	normFor(rows, cols, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr := x[r*cols : (r+1)*cols]
			yr := y[r*cols : (r+1)*cols]
			mu, is := meanRstd(xr, eps)
			layerNormRow(yr, xr, w, b, mu, is)
			mean[r], rstd[r] = T(mu), T(is)
		}
	})
}

// layerNormRow writes y = (x-mu)·is·w + b for one row, every operation
// rounded on its own (with w and b, float32, in AVX2 where the CPU has
// it: lnRowF32).
func layerNormRow[T Float](y, x, w, b []T, mu, is float64) {
	y = y[:len(x)]
	switch {
	case w != nil && b != nil:
		w, b = w[:len(x)], b[:len(x)]
		for j := lnRow(y, x, w, b, mu, is); j < len(x); j++ {
			h := float64((float64(x[j]) - mu) * is)
			y[j] = T(float64(h*float64(w[j])) + float64(b[j]))
		}
	case w != nil:
		w = w[:len(x)]
		for j, v := range x {
			y[j] = T((float64(v) - mu) * is * float64(w[j]))
		}
	case b != nil:
		b = b[:len(x)]
		for j, v := range x {
			y[j] = T((float64(v)-mu)*is + float64(b[j]))
		}
	default:
		for j, v := range x {
			y[j] = T((float64(v) - mu) * is)
		}
	}
}

// meanRstd returns the mean of x and 1/√(biased variance + eps).
func meanRstd[T Float](x []T, eps float64) (mu, rstd float64) {
	mu = sumPart(x) / float64(len(x))
	var acc [16]float64
	sqDev(&acc, x, mu)
	return mu, 1 / math.Sqrt(lanes16(&acc)/float64(len(x))+eps)
}

// LayerNormGrad writes the gradients of LayerNorm from dy and the saved x,
// w, mean and rstd (all contiguous). With x̂ = (x-mean)·rstd and g = dy·w,
// dx = rstd·(g - mean(g) - x̂·mean(g·x̂)) per row; dw = Σ_rows dy·x̂ and
// db = Σ_rows dy, overwritten. Any of dx, dw, db may be nil (not wanted);
// w nil means weight 1. Rows are split across the workers in at most
// lnChunks chunks of consecutive rows (their number fixed by rows alone);
// each chunk sums dw and db into its own float64 partial sums, which are
// then added in chunk order.
func LayerNormGrad[T Float](dx, dw, db, dy, x, w, mean, rstd []T, rows, cols int) {
	lnGradRows(dw, db, rows, cols, dx != nil, func(lo, hi int, aw, ab []float64) {
		for r := lo; r < hi; r++ {
			o := r * cols
			var dxr []T
			if dx != nil {
				dxr = dx[o : o+cols]
			}
			layerNormGradRow(dxr, dy[o:o+cols], x[o:o+cols], w, aw, ab, float64(mean[r]), float64(rstd[r]))
		}
	})
}

// lnGradRows is LayerNormGrad's split of the rows: rowsFn(lo, hi, aw, ab)
// does rows [lo, hi), adding their dw and db terms into aw and ab (nil
// when neither is wanted), over at most lnChunks chunks whose float64
// partial sums are then added in chunk order into dw and db.
func lnGradRows[T Float](dw, db []T, rows, cols int, wantDx bool, rowsFn func(lo, hi int, aw, ab []float64)) {
	if dw == nil && db == nil {
		if wantDx {
			normFor(rows, cols, func(lo, hi int) { rowsFn(lo, hi, nil, nil) })
		}
		return
	}
	per := max(1, ceilDiv(rows, lnChunks))
	chunks := ceilDiv(rows, per)
	buf := lnBufs.get()
	defer lnBufs.put(buf)
	part := scratchView[float64](&buf.b, 2*chunks*cols) // chunk k: dw sums, then db sums
	normFor(chunks, per*cols, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			aw, ab := part[2*k*cols:(2*k+1)*cols], part[(2*k+1)*cols:(2*k+2)*cols]
			clear(aw)
			clear(ab)
			rowsFn(k*per, min(rows, (k+1)*per), aw, ab)
		}
	})
	for j := range cols {
		var sw, sb float64
		for k := range chunks {
			sw += part[2*k*cols+j]
			sb += part[(2*k+1)*cols+j]
		}
		if dw != nil {
			dw[j] = T(sw)
		}
		if db != nil {
			db[j] = T(sb)
		}
	}
}

// lnChunks bounds the chunks of LayerNormGrad's partial sums; lnBufs holds
// their memory (2·lnChunks·cols float64 at most) between calls.
const lnChunks = 16

var lnBufs freeList[convBuf]

// layerNormGradRow writes one row of LayerNormGrad's dx (when dx is not
// nil) and adds the row's dw and db terms (dy·x̂ and dy) into aw and ab
// (when not nil). The row's sums Σ g and Σ g·x̂ (g = dy·w) run in 16
// float64 lanes, element j in lane j mod 16, then added by lanes16, and
// every operation is rounded on its own (no fused multiply-add), so that
// the AVX2 loops (lnGradSums, lnGradDx) give the same bits.
func layerNormGradRow[T Float](dx, dy, x, w []T, aw, ab []float64, mu, is float64) {
	n := len(x)
	dy = dy[:n]
	if w != nil {
		w = w[:n]
	}
	if aw != nil {
		aw, ab = aw[:n], ab[:n]
	}
	var sg, sgx [16]float64
	for j := lnGradSums(&sg, &sgx, dy, x, w, aw, ab, mu, is); j < n; j++ {
		g, h := float64(dy[j]), float64((float64(x[j])-mu)*is)
		if aw != nil {
			aw[j] += float64(g * h)
			ab[j] += g
		}
		if w != nil {
			g = float64(g * float64(w[j]))
		}
		sg[j&15] += g
		sgx[j&15] += float64(g * h)
	}
	if dx == nil {
		return
	}
	dx = dx[:n]
	mg, mgx := lanes16(&sg)/float64(n), lanes16(&sgx)/float64(n)
	for j := lnGradDx(dx, dy, x, w, mu, is, mg, mgx); j < n; j++ {
		g := float64(dy[j])
		if w != nil {
			g = float64(g * float64(w[j]))
		}
		h := float64((float64(x[j]) - mu) * is)
		dx[j] = T(is * (g - mg - float64(h*mgx)))
	}
}

// lnRow runs layerNormRow's loop with w and b over the whole groups of 8
// elements in assembly where it can (float32, AVX2) and returns how many
// it did.
func lnRow[T Float](y, x, w, b []T, mu, is float64) int {
	y32, ok := f32s(y)
	k := len(y) &^ 7
	if !ok || !CPU.AVX2FMA || k == 0 {
		return 0
	}
	x32, _ := f32s(x[:k])
	w32, _ := f32s(w[:k])
	b32, _ := f32s(b[:k])
	lnRowF32(&y32[0], &x32[0], &w32[0], &b32[0], k, mu, is)
	return k
}

// lnGradSums runs layerNormGradRow's first loop over the whole groups of
// 16 elements in assembly where it can (float32, w and aw given, AVX2)
// and returns how many it did.
func lnGradSums[T Float](sg, sgx *[16]float64, dy, x, w []T, aw, ab []float64, mu, is float64) int {
	d32, ok := f32s(dy)
	k := len(dy) &^ 15
	if !ok || !CPU.AVX2FMA || k == 0 || w == nil || aw == nil {
		return 0
	}
	x32, _ := f32s(x[:k])
	w32, _ := f32s(w[:k])
	_, _ = aw[k-1], ab[k-1]
	lnGradSumsF32(&d32[0], &x32[0], &w32[0], &aw[0], &ab[0], k, mu, is, sg, sgx)
	return k
}

// lnGradDx runs layerNormGradRow's dx loop over the whole groups of 8
// elements in assembly where it can (float32, w given, AVX2) and returns
// how many it did.
func lnGradDx[T Float](dx, dy, x, w []T, mu, is, mg, mgx float64) int {
	d32, ok := f32s(dx)
	k := len(dx) &^ 7
	if !ok || !CPU.AVX2FMA || k == 0 || w == nil {
		return 0
	}
	g32, _ := f32s(dy[:k])
	x32, _ := f32s(x[:k])
	w32, _ := f32s(w[:k])
	lnGradDxF32(&d32[0], &g32[0], &x32[0], &w32[0], k, mu, is, mg, mgx)
	return k
}

// BatchNorm normalises the contiguous x (n, c, hw) per channel:
// y = (x - mean)·invstd·w + b, w and b (c) optional (nil). In training,
// mean and the biased variance come from the batch (n·hw values per
// channel, float64, two passes), and runMean and runVar (c, nil when not
// tracked) move towards the batch mean and the unbiased variance:
// run = (1-momentum)·run + momentum·stat. In eval, runMean and runVar are
// the statistics. Either way the mean and invstd = 1/√(var + eps) used are
// stored (c) for backward; y is computed before their rounding to T.
// Channels are split across the workers.
func BatchNorm[T Float](y, x, w, b, runMean, runVar, mean, invstd []T, n, c, hw int, training bool, momentum, eps float64) {
	batchNorm(floatRuns[T](), y, x, w, b, runMean, runVar, mean, invstd, bnShape{n, c, hw}, training, false, momentum, eps)
}

// BatchNormRelu is BatchNorm followed by ReLU (y = max(0, ·), +0 for NaN),
// in one pass over each channel's values: the same bits as BatchNorm and
// then Unary(URelu) on its output.
func BatchNormRelu[T Float](y, x, w, b, runMean, runVar, mean, invstd []T, n, c, hw int, training bool, momentum, eps float64) {
	batchNorm(floatRuns[T](), y, x, w, b, runMean, runVar, mean, invstd, bnShape{n, c, hw}, training, true, momentum, eps)
}

// bnShape is the (n, c, hw) layout of a batch norm's x.
type bnShape struct{ n, c, hw int }

// run returns the bounds of channel ch's values in image i.
func (s bnShape) run(i, ch int) (lo, hi int) {
	return (i*s.c + ch) * s.hw, (i*s.c + ch + 1) * s.hw
}

// bnRuns are the loops over one run of a channel's values that BatchNorm
// and BatchNormGrad make, for x, y, dy and dx stored as E (a float type,
// or the bits of bfloat16): the same arithmetic whatever E.
type bnRuns[E any] struct {
	sum        func(acc *[16]float64, x []E)
	sqDev      func(acc *[16]float64, x []E, mu float64)
	dotDev     func(a, ax *[8]float64, dy, x []E, mu float64)
	affine     func(y, x []E, scale, shift float64)
	affineRelu func(y, x []E, scale, shift float64)
	grad       func(dx, dy, x []E, mu, a, b, c float64)
	// total is sumPart, for the gradient without x (nil: x required).
	total func(s []E) float64
}

// floatRuns returns the loops for operands of a float type.
func floatRuns[T Float]() bnRuns[T] {
	return bnRuns[T]{sumLanes[T], sqDev[T], dotDev[T], affine[T], affineRelu[T], bnGradRun[T], sumPart[T]}
}

// batchNorm is BatchNorm (and with relu BatchNormRelu) over x and y of E,
// the other operands of S.
func batchNorm[S Float, E any](r bnRuns[E], y, x []E, w, b, runMean, runVar, mean, invstd []S, sh bnShape, training, relu bool, momentum, eps float64) {
	m := sh.n * sh.hw
	aff := r.affine
	if relu {
		aff = r.affineRelu
	}
	normFor(sh.c, m, func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			var mu, v float64
			if training {
				var acc [16]float64
				for i := range sh.n {
					lo, hi := sh.run(i, ch)
					r.sum(&acc, x[lo:hi])
				}
				mu = lanes16(&acc) / float64(m)
				acc = [16]float64{}
				for i := range sh.n {
					lo, hi := sh.run(i, ch)
					r.sqDev(&acc, x[lo:hi], mu)
				}
				ss := lanes16(&acc)
				v = ss / float64(m)
				if runMean != nil {
					runMean[ch] = S((1-momentum)*float64(runMean[ch]) + momentum*mu)
				}
				if runVar != nil {
					unbiased := math.Inf(1)
					if m > 1 {
						unbiased = ss / float64(m-1)
					}
					runVar[ch] = S((1-momentum)*float64(runVar[ch]) + momentum*unbiased)
				}
			} else {
				mu, v = float64(runMean[ch]), float64(runVar[ch])
			}
			is := 1 / math.Sqrt(v+eps)
			scale, shift := is, -mu*is
			if w != nil {
				scale *= float64(w[ch])
				shift *= float64(w[ch])
			}
			if b != nil {
				shift += float64(b[ch])
			}
			for i := range sh.n {
				lo, hi := sh.run(i, ch)
				aff(y[lo:hi], x[lo:hi], scale, shift)
			}
			mean[ch], invstd[ch] = S(mu), S(is)
		}
	})
}

// BatchNormGrad writes the gradients of BatchNorm from dy and the saved x,
// w, mean and invstd, all contiguous, x and dy (n, c, hw). With
// x̂ = (x-mean)·invstd, dw = Σ dy·x̂ and db = Σ dy per channel (overwritten).
// In training the statistics depend on x:
// dx = w·invstd·(dy - mean(dy) - x̂·mean(dy·x̂)), the means over the
// channel's n·hw values; in eval they are constants: dx = w·invstd·dy.
// dx, dw, db may be nil (not wanted); w nil means weight 1; x may be nil in
// eval when dw is nil. Channels are split across the workers.
func BatchNormGrad[T Float](dx, dw, db, dy, x, w, mean, invstd []T, n, c, hw int, training bool) {
	batchNormGrad(floatRuns[T](), dx, dy, x, dw, db, w, mean, invstd, bnShape{n, c, hw}, training)
}

// batchNormGrad is BatchNormGrad over dx, dy and x of E, the other
// operands of S; x may be nil only where r.total is set.
func batchNormGrad[S Float, E any](r bnRuns[E], dx, dy, x []E, dw, db, w, mean, invstd []S, sh bnShape, training bool) {
	m := float64(sh.n * sh.hw)
	normFor(sh.c, sh.n*sh.hw, func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			mu, is := float64(mean[ch]), float64(invstd[ch])
			// sg = Σ dy, sgx = Σ dy·x̂ = invstd·Σ dy·(x-mean)
			var sg, sgx float64
			if training || dw != nil || db != nil {
				var a, ax [8]float64
				for i := range sh.n {
					lo, hi := sh.run(i, ch)
					if x != nil {
						r.dotDev(&a, &ax, dy[lo:hi], x[lo:hi], mu)
					} else {
						sg += r.total(dy[lo:hi])
					}
				}
				sg += lanes8(&a)
				sgx = lanes8(&ax) * is
			}
			if dw != nil {
				dw[ch] = S(sgx)
			}
			if db != nil {
				db[ch] = S(sg)
			}
			if dx == nil {
				continue
			}
			k := is
			if w != nil {
				k *= float64(w[ch])
			}
			for i := range sh.n {
				lo, hi := sh.run(i, ch)
				if !training {
					r.affine(dx[lo:hi], dy[lo:hi], k, 0)
					continue
				}
				// dx = k·dy − k·invstd·mean(dy·x̂)·(x−mean) − k·mean(dy)
				r.grad(dx[lo:hi], dy[lo:hi], x[lo:hi], mu, k, -k*is*sgx/m, -k*sg/m)
			}
		}
	})
}

// The loops below take AVX2 assembly for float32 (norm_amd64.s) and give
// the same bits in Go (the float64 path, the tails, the noasm build): the
// sums keep 16 (sqDev) or 8 (dotDev) running float64 sums, element i of a
// run going to sum i mod 16 (or 8), and no product is fused with an
// addition (the float64 conversions below forbid it).

// lanes16 adds sixteen running sums in a fixed order.
func lanes16(acc *[16]float64) float64 {
	var t [8]float64
	for i := range t {
		t[i] = acc[2*i] + acc[2*i+1]
	}
	return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]))
}

// lanes8 adds eight running sums in a fixed order.
func lanes8(acc *[8]float64) float64 {
	return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
}

// sumLanes adds x[i] to acc[i mod 16] (vecSumF32 and vecSumF64 of
// vec_amd64.s for the body).
func sumLanes[T Float](acc *[16]float64, x []T) {
	k := 0
	if CPU.AVX2FMA && len(x) >= 16 {
		k = len(x) &^ 15
		if x32, ok := f32s(x); ok {
			vecSumF32(&x32[0], k, acc)
		} else {
			vecSumF64((*float64)(unsafe.Pointer(&x[0])), k, acc)
		}
	}
	for i, v := range x[k:] {
		acc[i&15] += float64(v)
	}
}

// sqDev adds (x[i] − mu)² to acc[i mod 16].
func sqDev[T Float](acc *[16]float64, x []T, mu float64) {
	k := 0
	if x32, ok := f32s(x); ok && CPU.AVX2FMA && len(x) >= 16 {
		k = len(x) &^ 15
		normSqDevF32(&x32[0], k, mu, acc)
	}
	for i, v := range x[k:] {
		d := float64(v) - mu
		acc[i&15] += float64(d * d)
	}
}

// dotDev adds dy[i] to a[i mod 8] and dy[i]·(x[i] − mu) to ax[i mod 8].
func dotDev[T Float](a, ax *[8]float64, dy, x []T, mu float64) {
	x = x[:len(dy)]
	k := 0
	if g32, ok := f32s(dy); ok && CPU.AVX2FMA && len(dy) >= 8 {
		x32, _ := f32s(x)
		k = len(dy) &^ 7
		normDotDevF32(&g32[0], &x32[0], k, mu, a, ax)
	}
	for i, g := range dy[k:] {
		a[i&7] += float64(g)
		ax[i&7] += float64(float64(g) * (float64(x[k+i]) - mu))
	}
}

// affine writes y = x·scale + shift, computed in float64 and rounded once
// to T (the product is rounded first).
func affine[T Float](y, x []T, scale, shift float64) {
	y = y[:len(x)]
	k := 0
	if x32, ok := f32s(x); ok && CPU.AVX2FMA && len(x) >= 8 {
		y32, _ := f32s(y)
		k = len(x) &^ 7
		normAffineF32(&y32[0], &x32[0], k, scale, shift)
	}
	for j := k; j < len(x); j++ {
		y[j] = T(float64(float64(x[j])*scale) + shift)
	}
}

// affineRelu is affine followed by ReLU on the result (max(0, ·), +0 for
// NaN and -0), while the run is in cache.
func affineRelu[T Float](y, x []T, scale, shift float64) {
	affine(y, x, scale, shift)
	reluPart(y[:len(x)], y[:len(x)], false)
}

// bnGradRun writes dx = a·dy + (b·(x − mu) + c), computed in float64 with
// every operation rounded, then rounded to T.
func bnGradRun[T Float](dx, dy, x []T, mu, a, b, c float64) {
	dy, x = dy[:len(dx)], x[:len(dx)]
	k := 0
	if d32, ok := f32s(dx); ok && CPU.AVX2FMA && len(dx) >= 8 {
		g32, _ := f32s(dy)
		x32, _ := f32s(x)
		k = len(dx) &^ 7
		normGradF32(&d32[0], &g32[0], &x32[0], k, mu, a, b, c)
	}
	for j := k; j < len(dx); j++ {
		dx[j] = T(float64(a*float64(dy[j])) + (float64(b*(float64(x[j])-mu)) + c))
	}
}
