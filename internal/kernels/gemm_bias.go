package kernels

import "fmt"

// The bias epilogue of GemmBias: before the first K panel adds its partial
// product to a tile of C, the tile is set to beta·C + bias, while it is
// about to be read by the micro-kernel anyway; the kernel then runs in
// mode 1 (add to C). No pass over C is added and no copy of the bias is
// made.

// betaMode is the micro-kernel mode of a first K panel for beta: 0 stores
// the product, 1 adds it to C, 2 adds it to beta·C.
func betaMode(beta float64) int {
	switch beta {
	case 0:
		return 0
	case 1:
		return 1
	}
	return 2
}

// biasInit sets the rows×len(bias) tile of C at c[at:] (row stride ldc)
// to beta·C + bias, bias[x] going to column x; mode is betaMode's (C is
// not read in mode 0).
func biasInit[T Float](c []T, at, ldc, rows int, bias []T, beta T, mode int) {
	for r := range rows {
		dst := c[at+r*ldc : at+r*ldc+len(bias)]
		switch mode {
		case 0:
			copy(dst, bias)
		case 1:
			for x, v := range bias {
				dst[x] += v
			}
		default:
			for x, v := range bias {
				dst[x] = beta*dst[x] + v
			}
		}
	}
}

// biasAt is the bias of the columns from col on when the K panel at pc is
// the one that adds it (the first), else nil.
func (j *gemmJob[T]) biasAt(pc, col int) []T {
	if j.bias == nil || pc > 0 {
		return nil
	}
	return j.bias[col:]
}

// checkBias panics unless bias is nil or holds a value for each of the n
// columns of C.
func checkBias[T Float](fn string, bias []T, n int) {
	if bias != nil && len(bias) < n {
		panic(fmt.Sprintf("kernels.%s: bias has %d elements for %d columns of C", fn, len(bias), n))
	}
}
