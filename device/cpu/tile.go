package cpu

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// Tiled widening. The elementwise kernels (Unary, UnaryGrad, Binary) with
// a 16-bit operand do not widen whole operands: the output's elements are
// cut, in row-major order, into tiles of tileElems; each worker widens one
// tile of every input into its scratch (gathering through the operand's
// strides), runs the float32 kernel on the contiguous tile and converts
// the result into the output. A worker's scratch is tileOperands tiles of
// float32, kept for reuse (never freed): tileScratchBytes (64 KiB) for
// each goroutine that has run tiles at once, so Workers()·tileScratchBytes
// for one caller (W callers at once: W times that), whatever the operands'
// sizes.

const (
	// tileElems is the number of elements of each operand in one tile.
	tileElems = 4096
	// tileOperands is the most operands one tiled kernel widens (dx, dy,
	// x and y of UnaryGrad).
	tileOperands = 4
	// tileScratchBytes is one worker's tile scratch.
	tileScratchBytes = tileOperands * tileElems * 4
)

// tileScratch is one worker's float32 tiles.
type tileScratch [tileOperands][tileElems]float32

// tileScratches holds the scratch of every worker that has run a tiled
// kernel.
var tileScratches kernels.FreeList[tileScratch]

// inRegister selects the kernels that read 16-bit operands and convert
// them in registers (kernels.ReluHalf, BinaryBF16, BatchNormBF16, …) over
// the tile path, where both apply; the tests turn it off to compare the
// two.
var inRegister = true

// sameHalf reports whether the operands are all present, contiguous, of
// one 16-bit dtype and of one length: what the in-register kernels take.
func sameHalf(os ...device.Operand) bool {
	for _, o := range os {
		if o.Nil() || !o.DType.IsLowPrecision() || o.DType != os[0].DType || !o.Contiguous() || o.Len() != os[0].Len() {
			return false
		}
	}
	return true
}

// half returns the 16-bit elements of a contiguous operand.
func half(o device.Operand) []uint16 {
	return dtype.AsU16(o.Block.Bytes())[o.Off : o.Off+o.Len()]
}

// anyHalf reports whether a present operand has a dtype other than F32.
func anyHalf(os ...device.Operand) bool {
	for _, o := range os {
		if !o.Nil() && o.DType != dtype.F32 {
			return true
		}
	}
	return false
}

// tiled runs compute over dst's shape tile by tile, on all workers:
// compute gets the output tile and one tile per input (nil for an absent
// input), each viewed over dst's shape through its own strides.
func tiled(dst device.Operand, ins []device.Operand, compute func(d []float32, in [][]float32)) {
	dst, ins = coalesce(dst, ins)
	n := dst.Len()
	tiles := (n + tileElems - 1) / tileElems
	run := func(lo, hi int) {
		s := tileScratches.Get()
		defer tileScratches.Put(s)
		var in [tileOperands - 1][]float32
		for t := lo; t < hi; t++ {
			start, end := t*tileElems, min((t+1)*tileElems, n)
			for i, o := range ins {
				in[i] = nil
				if !o.Nil() {
					in[i] = s[i+1][:end-start]
					runs(dst.Shape, o, start, end, in[i], gather)
				}
			}
			d := s[0][:end-start]
			compute(d, in[:len(ins)])
			runs(dst.Shape, dst, start, end, d, scatter)
		}
	}
	if tiles == 1 {
		run(0, 1)
		return
	}
	kernels.ParallelFor(tiles, 1, run)
}

// coalesce returns dst and ins viewed over the fewest dimensions that
// hold the same elements in the same order: size-1 dimensions dropped and
// neighbours merged where every present operand steps through them as one
// (a contiguous operand's strides then read nil). Without it every run of
// the innermost dimension (32 elements of a 32×32 image, 4 of a 2×2) costs
// a multi-index and a conversion call of its own.
func coalesce(dst device.Operand, ins []device.Operand) (device.Operand, []device.Operand) {
	ops := append([]device.Operand{dst}, ins...)
	st := make([][]int, len(ops))
	for j, o := range ops {
		if !o.Nil() {
			st[j] = o.Strides
			if st[j] == nil {
				st[j] = kernels.Dense(dst.Shape)
			}
		}
	}
	var shape []int
	out := make([][]int, len(ops))
	for i, s := range dst.Shape {
		if s == 1 {
			continue
		}
		if k := len(shape) - 1; k >= 0 && mergeable(st, out, i, k, s) {
			shape[k] *= s
			for j := range ops {
				if st[j] != nil {
					out[j][k] = st[j][i]
				}
			}
			continue
		}
		shape = append(shape, s)
		for j := range ops {
			if st[j] != nil {
				out[j] = append(out[j], st[j][i])
			}
		}
	}
	if len(shape) == 0 || dst.Len() == 0 {
		shape = []int{dst.Len()}
		for j := range ops {
			out[j] = []int{1}
		}
	}
	for j := range ops {
		if ops[j].Nil() {
			continue
		}
		ops[j].Shape, ops[j].Strides = shape, out[j]
		if ops[j].Contiguous() {
			ops[j].Strides = nil
		}
	}
	return ops[0], ops[1:]
}

// mergeable reports whether dimension i of the original strides st
// continues coalesced dimension k of out (length s) for every operand.
func mergeable(st, out [][]int, i, k, s int) bool {
	for j := range st {
		if st[j] != nil && out[j][k] != st[j][i]*s {
			return false
		}
	}
	return true
}

// runs calls f on each run of the innermost dimension among the elements
// [start, end) (row-major over shape) of o, with o's block offset and
// stride of the run and the matching part of buf. A contiguous o (nil
// strides) is one run.
func runs(shape []int, o device.Operand, start, end int, buf []float32, f func(o device.Operand, off, stride int, v []float32)) {
	r := len(shape) - 1
	if o.Strides == nil || r < 0 {
		f(o, o.Off+start, 1, buf)
		return
	}
	st := o.Strides
	for i := start; i < end; {
		// The multi-index of element i.
		off, rem := o.Off, i
		for d := r; d >= 0; d-- {
			off += rem % shape[d] * st[d]
			rem /= shape[d]
		}
		n := min(shape[r]-i%shape[r], end-i)
		f(o, off, st[r], buf[i-start:i-start+n])
		i += n
	}
}

// gather widens the run of len(v) elements of o from off, stride apart.
func gather(o device.Operand, off, stride int, v []float32) {
	b, sz := o.Block.Bytes(), o.DType.Size()
	switch stride {
	case 1:
		toF32(v, o.DType, b[off*sz:(off+len(v))*sz])
	case 0:
		toF32(v[:1], o.DType, b[off*sz:(off+1)*sz])
		for i := range v {
			v[i] = v[0]
		}
	default:
		for i := range v {
			at := (off + i*stride) * sz
			toF32(v[i:i+1], o.DType, b[at:at+sz])
		}
	}
}

// scatter stores v into the run of o from off, stride apart.
func scatter(o device.Operand, off, stride int, v []float32) {
	b, sz := o.Block.Bytes(), o.DType.Size()
	if stride == 1 {
		fromF32(o.DType, b[off*sz:(off+len(v))*sz], v)
		return
	}
	for i := range v {
		at := (off + i*stride) * sz
		fromF32(o.DType, b[at:at+sz], v[i:i+1])
	}
}

// flatten views a contiguous operand as one dimension.
func flatten(o device.Operand) device.Operand {
	if !o.Nil() {
		o.Shape, o.Strides = []int{o.Len()}, nil
	}
	return o
}

// rowTiled runs compute over groups of whole rows, on all workers, for the
// row kernels (softmax, layer norm) with a 16-bit operand: rowOps are
// contiguous rows×cols operands and statOps contiguous rows-long ones (nil
// allowed), each widened group by group into a worker's tile scratch; the
// first rowOut of rowOps and statOut of statOps are outputs, not read but
// converted back. compute gets the group's row count and its tiles. It
// does nothing and reports false when a row does not fit a tile or the
// operands do not fit the scratch.
func rowTiled(rows, cols int, rowOps, statOps []device.Operand, rowOut, statOut int, compute func(n int, row, stat [][]float32)) bool {
	if cols == 0 || cols > tileElems || len(rowOps)+len(statOps) > tileOperands {
		return false
	}
	per := tileElems / cols
	run := func(lo, hi int) {
		s := tileScratches.Get()
		defer tileScratches.Put(s)
		var row, stat [tileOperands][]float32
		for t := lo; t < hi; t++ {
			r0 := t * per
			n := min(per, rows-r0)
			k := 0
			for i, o := range rowOps {
				row[i] = s[k][:n*cols]
				if i >= rowOut {
					gather(o, o.Off+r0*cols, 1, row[i])
				}
				k++
			}
			for i, o := range statOps {
				stat[i] = nil
				if !o.Nil() {
					stat[i] = s[k][:n]
					if i >= statOut {
						gather(o, o.Off+r0, 1, stat[i])
					}
					k++
				}
			}
			compute(n, row[:len(rowOps)], stat[:len(statOps)])
			for i := range rowOut {
				scatter(rowOps[i], rowOps[i].Off+r0*cols, 1, row[i])
			}
			for i := range statOut {
				if !statOps[i].Nil() {
					scatter(statOps[i], statOps[i].Off+r0, 1, stat[i])
				}
			}
		}
	}
	tiles := (rows + per - 1) / per
	if tiles <= 1 {
		run(0, tiles)
	} else {
		kernels.ParallelFor(tiles, 1, run)
	}
	return true
}
