package kernels

import "fmt"

// The indexing kernels view their contiguous operands as (outer, n, inner)
// blocks: a gathered or indexed dimension of size n (or m) between the
// product of the dimensions before it (outer) and after it (inner). Indices
// are int64 values in [0, n); one outside that range panics, since the
// caller validates them before the call.

// indexInRange panics when i is not in [0, n).
func indexInRange(i int64, n int) {
	if i < 0 || i >= int64(n) {
		panic(fmt.Sprintf("kernels: index %d out of range [0, %d)", i, n))
	}
}

// IndexSelect writes dst (outer, m, inner) = src[:, idx[j], :] for the m =
// len(idx) indices, src being (outer, n, inner). It copies elements exactly,
// so T may be any element type of the right size.
func IndexSelect[T any](dst, src []T, idx []int64, outer, n, inner int) {
	m := len(idx)
	for _, i := range idx {
		indexInRange(i, n)
	}
	for o := range outer {
		for j, i := range idx {
			d := (o*m + j) * inner
			s := (o*n + int(i)) * inner
			copy(dst[d:d+inner], src[s:s+inner])
		}
	}
}

// IndexAdd adds src (outer, m, inner) into dst (outer, n, inner) at rows
// idx (m = len(idx)); repeated indices accumulate, in index order.
func IndexAdd[T Float](dst []T, idx []int64, src []T, outer, n, inner int) {
	m := len(idx)
	for _, i := range idx {
		indexInRange(i, n)
	}
	for o := range outer {
		for j, i := range idx {
			d := dst[(o*n+int(i))*inner:][:inner]
			s := src[(o*m+j)*inner:][:inner]
			for k, v := range s {
				d[k] += v
			}
		}
	}
}

// Gather writes dst[o,j,i] = src[o, idx[o,j,i], i] for src (outer, n,
// inner) and idx, dst (outer, m, inner) (torch.gather along the middle
// dimension). It copies elements exactly.
func Gather[T any](dst, src []T, idx []int64, outer, n, m, inner int) {
	for o := range outer {
		for j := range m {
			at := (o*m + j) * inner
			for i := range inner {
				x := idx[at+i]
				indexInRange(x, n)
				dst[at+i] = src[(o*n+int(x))*inner+i]
			}
		}
	}
}

// ScatterAdd adds src (outer, m, inner) into dst (outer, n, inner) at
// dst[o, idx[o,j,i], i]; repeated indices accumulate, in row-major order of
// idx.
func ScatterAdd[T Float](dst []T, idx []int64, src []T, outer, n, m, inner int) {
	for o := range outer {
		for j := range m {
			at := (o*m + j) * inner
			for i := range inner {
				x := idx[at+i]
				indexInRange(x, n)
				dst[(o*n+int(x))*inner+i] += src[at+i]
			}
		}
	}
}
