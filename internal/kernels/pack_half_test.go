package kernels

import (
	"math"
	"testing"
)

// TestWidenRows checks widenRows (assembly where the CPU has AVX2) bit
// for bit against its Go twin over every 16-bit pattern, NaNs and
// denormals included, in panels of 16 and 32 columns at a leading
// dimension wider than the row, and bfloat16 against its closed form (the
// bits shifted up by 16). Nothing past the k·w outputs is written.
func TestWidenRows(t *testing.T) {
	const ld = 41 // ≥ w, odd: rows start at every alignment
	for _, bf16 := range []bool{true, false} {
		for _, w := range []int{16, 32, 8} {
			k := (1<<16 + w - 1) / w
			h := make([]uint16, 3+(k-1)*ld+w)
			for i := range 1 << 16 { // pattern i is row i/w, column i%w
				h[3+(i/w)*ld+i%w] = uint16(i)
			}
			for _, kk := range []int{1, 2, k} {
				got := make([]float32, kk*w+1)
				want := make([]float32, kk*w+1)
				got[kk*w], want[kk*w] = -7, -7
				widenRows(got, h, 3, ld, kk, w, bf16)
				widenRowsGo(want, h, 3, ld, kk, w, bf16)
				for i := range got {
					g, wb := math.Float32bits(got[i]), math.Float32bits(want[i])
					if g != wb {
						t.Fatalf("bf16=%v w=%d k=%d: [%d] = %#08x, Go twin %#08x", bf16, w, kk, i, g, wb)
					}
					if bf16 && i < kk*w {
						if src := uint32(h[3+(i/w)*ld+i%w]) << 16; g != src {
							t.Fatalf("w=%d k=%d: [%d] = %#08x, want %#08x", w, kk, i, g, src)
						}
					}
				}
			}
		}
	}
}
