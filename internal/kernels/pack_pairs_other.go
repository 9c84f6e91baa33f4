//go:build noasm || !amd64

package kernels

// pairPackAsm: without assembly every pair panel packs in Go.
func pairPackAsm(int) bool { return false }

func packPairRowsAVX512([]uint32, []uint16, int, int, int, int, int) {
	panic("kernels: no assembly")
}

func packPairLinesAVX512([]uint32, []uint16, int, int, int, int, int, int) {
	panic("kernels: no assembly")
}

// pairPanelsFast reports false: no assembly in this build.
func pairPanelsFast([]uint32, []pairInput, int, int) bool { return false }
