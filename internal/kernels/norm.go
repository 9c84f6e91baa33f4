package kernels

import "math"

// LayerNorm normalises each row of the contiguous x (rows, cols):
// y = (x - mean)·rstd·w + b with the row's mean and rstd = 1/√(var + eps)
// (biased variance), and stores mean and rstd (rows) for backward. w and b
// (cols) may be nil: weight 1, bias 0. Statistics are computed in float64
// (two passes) and y is computed from them before they are rounded to T
// for storage.
func LayerNorm[T Float](y, x, w, b []T, mean, rstd []T, rows, cols int, eps float64) {
	for r := range rows {
		xr := x[r*cols : (r+1)*cols]
		yr := y[r*cols : (r+1)*cols]
		mu, is := meanRstd(xr, eps)
		for j, v := range xr {
			h := (float64(v) - mu) * is
			if w != nil {
				h *= float64(w[j])
			}
			if b != nil {
				h += float64(b[j])
			}
			yr[j] = T(h)
		}
		mean[r], rstd[r] = T(mu), T(is)
	}
}

// meanRstd returns the mean of x and 1/√(biased variance + eps).
func meanRstd[T Float](x []T, eps float64) (mu, rstd float64) {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	mu = s / float64(len(x))
	var ss float64
	for _, v := range x {
		d := float64(v) - mu
		ss += d * d
	}
	return mu, 1 / math.Sqrt(ss/float64(len(x))+eps)
}

// LayerNormGrad writes the gradients of LayerNorm from dy and the saved x,
// w, mean and rstd (all contiguous). With x̂ = (x-mean)·rstd and g = dy·w,
// dx = rstd·(g - mean(g) - x̂·mean(g·x̂)) per row; dw = Σ_rows dy·x̂ and
// db = Σ_rows dy, overwritten. Any of dx, dw, db may be nil (not wanted);
// w nil means weight 1.
func LayerNormGrad[T Float](dx, dw, db, dy, x, w, mean, rstd []T, rows, cols int) {
	var aw, ab []float64
	if dw != nil {
		aw = make([]float64, cols)
	}
	if db != nil {
		ab = make([]float64, cols)
	}
	for r := range rows {
		xr, gr := x[r*cols:(r+1)*cols], dy[r*cols:(r+1)*cols]
		mu, is := float64(mean[r]), float64(rstd[r])
		var sg, sgx float64
		for j, v := range xr {
			h := (float64(v) - mu) * is
			g := float64(gr[j])
			if aw != nil {
				aw[j] += g * h
			}
			if ab != nil {
				ab[j] += g
			}
			if w != nil {
				g *= float64(w[j])
			}
			sg += g
			sgx += g * h
		}
		if dx == nil {
			continue
		}
		n := float64(cols)
		sg, sgx = sg/n, sgx/n
		dr := dx[r*cols : (r+1)*cols]
		for j, v := range xr {
			h := (float64(v) - mu) * is
			g := float64(gr[j])
			if w != nil {
				g *= float64(w[j])
			}
			dr[j] = T(is * (g - sg - h*sgx))
		}
	}
	for j := range aw {
		dw[j] = T(aw[j])
	}
	for j := range ab {
		db[j] = T(ab[j])
	}
}

// BatchNorm normalises the contiguous x (n, c, hw) per channel:
// y = (x - mean)·invstd·w + b, w and b (c) optional (nil). In training,
// mean and the biased variance come from the batch (n·hw values per
// channel, float64, two passes), and runMean and runVar (c, nil when not
// tracked) move towards the batch mean and the unbiased variance:
// run = (1-momentum)·run + momentum·stat. In eval, runMean and runVar are
// the statistics. Either way the mean and invstd = 1/√(var + eps) used are
// stored (c) for backward; y is computed before their rounding to T.
func BatchNorm[T Float](y, x, w, b, runMean, runVar, mean, invstd []T, n, c, hw int, training bool, momentum, eps float64) {
	m := n * hw
	for ch := range c {
		var mu, v float64
		if training {
			var s float64
			for i := range n {
				for _, e := range x[(i*c+ch)*hw : (i*c+ch+1)*hw] {
					s += float64(e)
				}
			}
			mu = s / float64(m)
			var ss float64
			for i := range n {
				for _, e := range x[(i*c+ch)*hw : (i*c+ch+1)*hw] {
					d := float64(e) - mu
					ss += d * d
				}
			}
			v = ss / float64(m)
			if runMean != nil {
				runMean[ch] = T((1-momentum)*float64(runMean[ch]) + momentum*mu)
			}
			if runVar != nil {
				unbiased := math.Inf(1)
				if m > 1 {
					unbiased = ss / float64(m-1)
				}
				runVar[ch] = T((1-momentum)*float64(runVar[ch]) + momentum*unbiased)
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
		for i := range n {
			lo, hi := (i*c+ch)*hw, (i*c+ch+1)*hw
			for j, e := range x[lo:hi] {
				y[lo+j] = T(float64(e)*scale + shift)
			}
		}
		mean[ch], invstd[ch] = T(mu), T(is)
	}
}

// BatchNormGrad writes the gradients of BatchNorm from dy and the saved x,
// w, mean and invstd, all contiguous, x and dy (n, c, hw). With
// x̂ = (x-mean)·invstd, dw = Σ dy·x̂ and db = Σ dy per channel (overwritten).
// In training the statistics depend on x:
// dx = w·invstd·(dy - mean(dy) - x̂·mean(dy·x̂)), the means over the
// channel's n·hw values; in eval they are constants: dx = w·invstd·dy.
// dx, dw, db may be nil (not wanted); w nil means weight 1; x may be nil in
// eval when dw is nil.
func BatchNormGrad[T Float](dx, dw, db, dy, x, w, mean, invstd []T, n, c, hw int, training bool) {
	m := float64(n * hw)
	for ch := range c {
		mu, is := float64(mean[ch]), float64(invstd[ch])
		var sg, sgx float64
		if training || dw != nil || db != nil {
			for i := range n {
				lo, hi := (i*c+ch)*hw, (i*c+ch+1)*hw
				for j, g := range dy[lo:hi] {
					sg += float64(g)
					if x != nil {
						sgx += float64(g) * (float64(x[lo+j]) - mu) * is
					}
				}
			}
		}
		if dw != nil {
			dw[ch] = T(sgx)
		}
		if db != nil {
			db[ch] = T(sg)
		}
		if dx == nil {
			continue
		}
		k := is
		if w != nil {
			k *= float64(w[ch])
		}
		for i := range n {
			lo, hi := (i*c+ch)*hw, (i*c+ch+1)*hw
			for j, g := range dy[lo:hi] {
				if !training {
					dx[lo+j] = T(k * float64(g))
					continue
				}
				h := (float64(x[lo+j]) - mu) * is
				dx[lo+j] = T(k * (float64(g) - sg/m - h*sgx/m))
			}
		}
	}
}
