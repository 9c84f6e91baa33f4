package cuda

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Reductions of kernels/reduce.cu.

// reduceThreads is the block size of reduce_block_* (REDUCE_THREADS).
const reduceThreads = 256

// Reduce picks one thread an output for short reductions, or when the
// outputs are adjacent in the source (columns: adjacent threads then read
// adjacent elements), and a block an output else (its threads read one
// output's elements side by side: rows).
const (
	reduceShort   = 32  // reduced elements up to which one thread does an output
	reduceColumns = 256 // adjacent outputs from which one thread does an output
)

func (k *kern) Reduce(op device.ReduceOp, dst, src device.Operand, arg float64) {
	if op >= device.NumReduceOps {
		k.bad("reduce", "unknown op %d", op)
	}
	name := "reduce " + op.String()
	if len(dst.Shape) != len(src.Shape) {
		k.bad(name, "destination shape %v and source shape %v differ in rank", dst.Shape, src.Shape)
	}
	k.contiguous(name, dst)
	sst := stridesOf(src)
	var keep, keepSt, red, redSt []int
	for i, s := range src.Shape {
		switch {
		case dst.Shape[i] == 1 && s != 1:
			red, redSt = append(red, s), append(redSt, sst[i])
		case dst.Shape[i] == s:
			keep, keepSt = append(keep, s), append(keepSt, sst[i])
		default:
			k.bad(name, "destination shape %v does not reduce source shape %v (axis %d)", dst.Shape, src.Shape, i)
		}
	}
	outs, count := prod(keep), prod(red)
	if outs == 0 {
		return
	}
	kl := k.layouts(name, keep, device.Operand{Shape: keep, Strides: keepSt})
	rl := k.layouts(name, red, device.Operand{Shape: red, Strides: redSt})
	args := []Arg{k.Ptr(dst), Int(int(dst.DType)), k.Ptr(src), kl[0], rl[0], I64(int64(outs)), I64(int64(count)), Int(int(op)), F64(arg)}
	if count <= reduceShort || columns(keep, keepSt, outs) {
		k.launch("reduce_thread_"+Suffix(src.DType), Linear(outs), args...)
		return
	}
	l := Launch{Grid: [3]uint32{uint32(min(outs, maxGrid)), 1, 1}, Block: [3]uint32{reduceThreads, 1, 1}}
	k.launch("reduce_block_"+Suffix(src.DType), l, args...)
}

// sumSquaresChunk and sumSquaresMaxChunks are SUMSQ_CHUNK and
// SUMSQ_MAX_CHUNKS of reduce.cu: the chunk sums of one round of
// SumSquares fit the module's buffer.
const (
	sumSquaresChunk     = 1 << 12
	sumSquaresMaxChunks = 1 << 16
)

// sumSquaresRound is the chunks of one round: sumSquaresMaxChunks, less in
// the test of the rounds.
var sumSquaresRound = sumSquaresMaxChunks

func (k *kern) SumSquares(dst, src device.Operand) {
	if dst.DType != dtype.F64 || dst.Len() != 1 {
		k.bad("sum_squares", "destination %s %v, want one F64 element", dst.DType, dst.Shape)
	}
	k.floatDType("sum_squares", src)
	k.contiguous("sum_squares", src)
	n := src.Len()
	one := Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}
	if n == 0 {
		k.launch("sumsq_total", one, k.Ptr(dst), I64(0), Int(0))
		return
	}
	round := sumSquaresChunk * sumSquaresRound
	for lo := 0; lo < n; lo += round {
		m := min(n-lo, round)
		chunks := (m + sumSquaresChunk - 1) / sumSquaresChunk
		part := src
		part.Off += lo
		k.launch("sumsq_chunks_"+Suffix(src.DType), Linear(4*chunks), k.Ptr(part), I64(int64(m)), I64(int64(chunks)))
		acc := 0
		if lo > 0 {
			acc = 1
		}
		k.launch("sumsq_total", one, k.Ptr(dst), I64(int64(chunks)), Int(acc))
	}
}

// columns reports whether the kept axes end in a dense run of at least
// reduceColumns outputs.
func columns(keep, keepSt []int, outs int) bool {
	sh, st := coalesce(keep, keepSt)
	return outs >= reduceColumns && len(sh) > 0 && st[0][len(sh)-1] == 1 && sh[len(sh)-1] >= reduceColumns
}

func prod(s []int) int {
	n := 1
	for _, v := range s {
		n *= v
	}
	return n
}
