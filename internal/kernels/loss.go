package kernels

import (
	"fmt"
	"math"
)

// CrossEntropy writes, for logits (rows, cols) and integer targets (rows),
// the per-row loss lse - (1-smoothing)·z[t] - smoothing·mean(z) — that is
// (1-ε)·(-log p_t) + ε·mean over classes of -log p_c, PyTorch's label
// smoothing — and the row's log-sum-exp lse (float64 sums, stored as
// T). Rows whose target equals ignore get loss 0. A target outside
// [0, cols) that is not ignore panics: the caller's data is wrong.
//
// float32 logits take exp32 (fastmath.go) on z − max rounded to float32;
// rows are shared out across the workers when the call is large.
func CrossEntropy[T Float](loss, lse, logits []T, target []int64, rows, cols int, ignore int64, smoothing float64) {
	checkTargets(target[:rows], cols, ignore)
	rowsFor(rows, cols, func(lo, hi int) { crossEntropyRows(loss, lse, logits, target, lo, hi, cols, ignore, smoothing) })
}

func crossEntropyRows[T Float](loss, lse, logits []T, target []int64, lo, hi, cols int, ignore int64, smoothing float64) {
	for r := lo; r < hi; r++ {
		z := logits[r*cols : (r+1)*cols]
		m := rowMax(z)
		var s, sz float64
		if z32, ok := f32s(z); ok {
			s = expShiftSum(z32, float32(m))
			for _, v := range z {
				sz += float64(v)
			}
		} else {
			for _, v := range z {
				s += math.Exp(float64(v) - m)
				sz += float64(v)
			}
		}
		l := m + math.Log(s)
		lse[r] = T(l)
		t := target[r]
		if t == ignore {
			loss[r] = 0
			continue
		}
		loss[r] = T(l - (1-smoothing)*float64(z[t]) - smoothing*sz/float64(cols))
	}
}

// checkTargets panics on the first target outside [0, cols) that is not
// ignore, on the calling goroutine (before any row is handed to a worker,
// where a panic could not be recovered by the caller).
func checkTargets(target []int64, cols int, ignore int64) {
	for r, t := range target {
		if t != ignore {
			checkTarget(t, r, cols)
		}
	}
}

func checkTarget(t int64, r, cols int) {
	if t < 0 || t >= int64(cols) {
		panic(fmt.Sprintf("kernels: cross entropy: target %d of row %d is outside [0, %d)", t, r, cols))
	}
}

// CrossEntropyGrad writes dlogits = dloss[r]·(softmax(z) - (1-ε)·onehot(t)
// - ε/cols) for each row r, the softmax recomputed from the logits and the
// stored lse (exp32 for float32); ignored rows get 0. All operands
// contiguous.
func CrossEntropyGrad[T Float](dlogits, dloss, logits, lse []T, target []int64, rows, cols int, ignore int64, smoothing float64) {
	checkTargets(target[:rows], cols, ignore)
	rowsFor(rows, cols, func(lo, hi int) {
		crossEntropyGradRows(dlogits, dloss, logits, lse, target, lo, hi, cols, ignore, smoothing)
	})
}

func crossEntropyGradRows[T Float](dlogits, dloss, logits, lse []T, target []int64, lo, hi, cols int, ignore int64, smoothing float64) {
	u := smoothing / float64(cols)
	for r := lo; r < hi; r++ {
		d := dlogits[r*cols : (r+1)*cols]
		t := target[r]
		if t == ignore {
			clear(d)
			continue
		}
		z := logits[r*cols : (r+1)*cols]
		g, l := float64(dloss[r]), float64(lse[r])
		if d32, ok := f32s(d); ok {
			// exp32(z − lse) into d, then the affine part in float64.
			z32, _ := f32s(z)
			expShiftRun(d32, z32, float32(l))
			pt := float64(d32[t])
			for j, e := range d32 {
				d32[j] = float32(g * (float64(e) - u))
			}
			d32[t] = float32(g * (pt - u - (1 - smoothing)))
			continue
		}
		for j, v := range z {
			p := math.Exp(float64(v)-l) - u
			if int64(j) == t {
				p -= 1 - smoothing
			}
			d[j] = T(g * p)
		}
	}
}
