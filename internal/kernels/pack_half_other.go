//go:build noasm || !amd64

package kernels

// widenRows is widenRowsGo: without assembly there is no other packer.
func widenRows(d []float32, h []uint16, at, ld, k, w int, bf16 bool) {
	widenRowsGo(d, h, at, ld, k, w, bf16)
}

// widenCols is widenColsGo: without assembly there is no other packer.
func widenCols(d []float32, h []uint16, at, ld, k, nr int, bf16 bool) {
	widenColsGo(d, h, at, ld, k, nr, bf16)
}
