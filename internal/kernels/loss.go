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
func CrossEntropy[T Float](loss, lse, logits []T, target []int64, rows, cols int, ignore int64, smoothing float64) {
	for r := range rows {
		z := logits[r*cols : (r+1)*cols]
		m := rowMax(z)
		var s, sz float64
		for _, v := range z {
			s += math.Exp(float64(v) - m)
			sz += float64(v)
		}
		l := m + math.Log(s)
		lse[r] = T(l)
		t := target[r]
		if t == ignore {
			loss[r] = 0
			continue
		}
		checkTarget(t, r, cols)
		loss[r] = T(l - (1-smoothing)*float64(z[t]) - smoothing*sz/float64(cols))
	}
}

func checkTarget(t int64, r, cols int) {
	if t < 0 || t >= int64(cols) {
		panic(fmt.Sprintf("kernels: cross entropy: target %d of row %d is outside [0, %d)", t, r, cols))
	}
}

// CrossEntropyGrad writes dlogits = dloss[r]·(softmax(z) - (1-ε)·onehot(t)
// - ε/cols) for each row r, the softmax recomputed from the logits and the
// stored lse; ignored rows get 0. All operands contiguous.
func CrossEntropyGrad[T Float](dlogits, dloss, logits, lse []T, target []int64, rows, cols int, ignore int64, smoothing float64) {
	u := smoothing / float64(cols)
	for r := range rows {
		d := dlogits[r*cols : (r+1)*cols]
		t := target[r]
		if t == ignore {
			clear(d)
			continue
		}
		checkTarget(t, r, cols)
		z := logits[r*cols : (r+1)*cols]
		g, l := float64(dloss[r]), float64(lse[r])
		for j, v := range z {
			p := math.Exp(float64(v)-l) - u
			if int64(j) == t {
				p -= 1 - smoothing
			}
			d[j] = T(g * p)
		}
	}
}
