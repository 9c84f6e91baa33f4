package kernels

import "math"

// Reduction codes, in the order of device.ReduceOp.
const (
	RSum = iota
	RMean
	RMax
	RMin
	RVar
	RArgMax
)

// Reduce reduces src[sl] over the axes where the contiguous dst's shape
// (dshape, same rank as sl.Shape) is 1 and sl's is not, writing through
// store(i, v) for each output index i in row-major order. Sums accumulate
// in float64. arg is Var's correction.
func Reduce[T Float](op int, arg float64, dshape []int, src []T, sl Layout, store func(i int, v float64)) {
	keepShape, keepStr, redShape, redStr := splitAxes(dshape, sl)
	count, k := columnBlock(op, keepShape, keepStr, redShape)
	if k > 0 {
		columnSum(op == RMean, count, k, src, Layout{Off: sl.Off, Shape: redShape, Strides: redStr}, store)
		return
	}
	i := 0
	walk(keepShape, []Layout{{Off: sl.Off, Shape: keepShape, Strides: keepStr}}, func(o []int, n int, inc []int) {
		base := o[0]
		for range n {
			in := Layout{Off: base, Shape: redShape, Strides: redStr}
			store(i, reduceOne(op, arg, count, src, in))
			i++
			base += inc[0]
		}
	})
}

// splitAxes splits sl's axes into the kept ones (dshape not 1 there, or
// sl 1 there) and the reduced ones, each with sl's strides.
func splitAxes(dshape []int, sl Layout) (keepShape, keepStr, redShape, redStr []int) {
	sst := stridesOf(sl)
	for i, s := range sl.Shape {
		if dshape[i] == 1 && s != 1 {
			redShape = append(redShape, s)
			redStr = append(redStr, sst[i])
		} else {
			keepShape = append(keepShape, s)
			keepStr = append(keepStr, sst[i])
		}
	}
	return keepShape, keepStr, redShape, redStr
}

// columnBlock returns the number of reduced positions and the kept block
// length k when op is a sum or mean that columnSum takes, else k = 0.
func columnBlock(op int, keepShape, keepStr, redShape []int) (count, k int) {
	count = 1
	for _, s := range redShape {
		count *= s
	}
	if k = innerBlock(keepShape, keepStr); (op == RSum || op == RMean) && k >= columnSumMin && count > 1 {
		return count, k
	}
	return count, 0
}

func reduceOne[T Float](op int, arg float64, count int, src []T, in Layout) float64 {
	ls := []Layout{in}
	switch op {
	case RSum, RMean, RVar:
		var s float64
		walk(in.Shape, ls, func(o []int, n int, inc []int) {
			p := o[0]
			if inc[0] == 1 {
				s += sumRun(src[p : p+n])
				return
			}
			for range n {
				s += float64(src[p])
				p += inc[0]
			}
		})
		if op == RSum {
			return s
		}
		mean := s / float64(count)
		if op == RMean {
			return mean
		}
		var ss float64
		walk(in.Shape, ls, func(o []int, n int, inc []int) {
			p := o[0]
			for range n {
				d := float64(src[p]) - mean
				ss += d * d
				p += inc[0]
			}
		})
		return ss / (float64(count) - arg)
	case RMax, RMin, RArgMax:
		best, at, k := math.NaN(), 0, 0
		walk(in.Shape, ls, func(o []int, n int, inc []int) {
			p := o[0]
			for range n {
				v := float64(src[p])
				switch {
				case k == 0:
					best, at = v, 0
				case best != best: // NaN wins and stays
				case v != v:
					best, at = v, k
				case op == RMin && v < best, op != RMin && v > best:
					best, at = v, k
				}
				k++
				p += inc[0]
			}
		})
		if op == RArgMax {
			return float64(at)
		}
		return best
	}
	panic("kernels: unknown reduction")
}

// columnSumMin is the smallest kept block that columnSum takes.
const columnSumMin = 16

// innerBlock returns the number of kept elements when they form one
// contiguous block (row-major strides ending in 1, size-1 dimensions
// ignored), else 0.
func innerBlock(shape, strides []int) int {
	n, want := 1, 1
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] == 1 {
			continue
		}
		if strides[i] != want {
			return 0
		}
		n *= shape[i]
		want *= shape[i]
	}
	return n
}

// columnSum is Reduce's sum or mean over outer axes when the k kept
// elements are one contiguous block at every reduced position (the bias
// gradient of a Linear: (B, T, C) summed to (C)): it adds the blocks row
// after row into float64 accumulators, reading memory in order, where
// reducing one output at a time would stride through all of it k times.
// Each output gets the same additions in the same order as there, so the
// result is bit for bit the same. Workers take disjoint column ranges.
func columnSum[T Float](mean bool, count, k int, src []T, red Layout, store func(i int, v float64)) {
	columnSumRows(mean, count, k, red, store, func(a []float64, lo int, rows []int) {
		for _, p := range rows {
			row := src[p+lo : p+lo+len(a)]
			for j := range a {
				a[j] += float64(row[j])
			}
		}
	})
}

// columnSumRows is columnSum with the elements read by add, which adds
// into a, for each block offset in rows in order, the block's elements
// from lo on (len(a) of them); the workers call it on disjoint column
// ranges.
func columnSumRows(mean bool, count, k int, red Layout, store func(i int, v float64), add func(a []float64, lo int, rows []int)) {
	rows := make([]int, 0, count) // the block's offset at every reduced position, in order
	walk(red.Shape, []Layout{red}, func(o []int, n int, inc []int) {
		for p := o[0]; n > 0; n-- {
			rows = append(rows, p)
			p += inc[0]
		}
	})
	acc := make([]float64, k)
	ParallelFor(k, max(64, (1<<16)/max(len(rows), 1)), func(lo, hi int) {
		add(acc[lo:hi], lo, rows)
	})
	for i, v := range acc {
		if mean {
			v /= float64(count)
		}
		store(i, v)
	}
}
