package kernels

// Float is the element type of the floating-point kernels.
type Float interface{ ~float32 | ~float64 }

// Layout places an N-d array in a slice: element (i0, i1, …) lives at
// Off + Σ ik·Strides[k]. nil Strides means contiguous row-major.
type Layout struct {
	Off     int
	Shape   []int
	Strides []int
}

// Len returns the number of elements.
func (l Layout) Len() int {
	n := 1
	for _, s := range l.Shape {
		n *= s
	}
	return n
}

// Dense returns the row-major strides of shape.
func Dense(shape []int) []int {
	st := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = n
		n *= shape[i]
	}
	return st
}

func stridesOf(l Layout) []int {
	if l.Strides == nil {
		return Dense(l.Shape)
	}
	return l.Strides
}

// walk visits every element of a shape for k layouts at once, one run of the
// innermost (coalesced) dimension at a time: f gets each layout's offset of
// the run's first element, the run length and each layout's stride within it.
func walk(shape []int, ls []Layout, f func(off []int, n int, inc []int)) {
	k := len(ls)
	st := make([][]int, k)
	for j, l := range ls {
		st[j] = stridesOf(l)
	}
	// Drop size-1 dimensions and merge dimensions that are contiguous for
	// every layout.
	var dims []int
	var strs [][]int = make([][]int, k)
	for i, s := range shape {
		if s == 0 {
			return
		}
		if s == 1 {
			continue
		}
		if n := len(dims); n > 0 {
			merge := true
			for j := range k {
				if strs[j][n-1] != st[j][i]*s {
					merge = false
					break
				}
			}
			if merge {
				dims[n-1] *= s
				for j := range k {
					strs[j][n-1] = st[j][i]
				}
				continue
			}
		}
		dims = append(dims, s)
		for j := range k {
			strs[j] = append(strs[j], st[j][i])
		}
	}
	off := make([]int, k)
	base := make([]int, k)
	for j, l := range ls {
		base[j] = l.Off
	}
	if len(dims) == 0 {
		copy(off, base)
		f(off, 1, make([]int, k))
		return
	}
	r := len(dims) - 1
	inc := make([]int, k)
	for j := range k {
		inc[j] = strs[j][r]
	}
	idx := make([]int, r)
	for {
		for j := range k {
			o := base[j]
			for d := range r {
				o += idx[d] * strs[j][d]
			}
			off[j] = o
		}
		f(off, dims[r], inc)
		d := r - 1
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < dims[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}
