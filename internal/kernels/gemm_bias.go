package kernels

import "fmt"

// The bias epilogue of GemmBias: before the first K panel adds its partial
// product to a tile of C, the tile is set to beta·C + bias (mergeTile of
// the bias row), while it is about to be read by the micro-kernel anyway;
// the kernel then runs in mode 1 (add to C). No pass over C is added and
// no copy of the bias is made.

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
