package kernels

import (
	"math"
	"math/rand/v2"
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

// TestPackHalfPanels checks packA and packB on 16-bit operands, with each
// kernel's packers and strips of several lengths (shorter than a block of
// 8 depths, a few blocks, the whole depth), bit for bit against packing
// the operand widened first with the generic loops.
func TestPackHalfPanels(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	kerns := []gemmKernel[float32]{sgemmGoKernel, go12x32}
	asm, _ := sgemmAsmKernels()
	kerns = append(kerns, asm...)
	for _, kn := range kerns {
		plain := kn
		plain.packA, plain.packAT, plain.packB, plain.packBT = nil, nil, nil, nil
		for _, sz := range [][3]int{{13, 37, 40}, {12, 5, 32}, {24, 64, 64}, {7, 200, 17}} {
			mc, kc, nc := sz[0], sz[1], sz[2]
			ld, off := max(mc, kc, nc)+3, 5
			n := off + (max(mc, kc, nc)+2)*ld
			for _, bf16 := range []bool{true, false} {
				h := gemmHalfBits(r, n, bf16)
				f := make([]float32, n)
				halfToF32(f, h, bf16)
				src, wide := operand[float32]{h: h, bf16: bf16}, operand[float32]{f: f}
				for _, sl := range []int{max(mc, kc, nc), 7 * kn.mr, 8*kn.mr + 3, 40 * kn.mr} {
					strip := make([]float32, max(sl, mc, kc, nc))
					for _, trans := range []bool{false, true} {
						got := make([]float32, max(roundUp(mc, kn.mr), roundUp(nc, kn.nr))*kc)
						want := make([]float32, len(got))
						packA(&kn, got, src, off, ld, trans, 2, mc, 1, kc, -1.5, strip)
						packA(&plain, want, wide, off, ld, trans, 2, mc, 1, kc, -1.5, nil)
						samePanel(t, kn.name+" packA", trans, sz, got, want)
						packB(&kn, got, src, off, ld, trans, 1, kc, 2, nc, strip)
						packB(&plain, want, wide, off, ld, trans, 1, kc, 2, nc, nil)
						samePanel(t, kn.name+" packB", trans, sz, got, want)
					}
				}
			}
		}
	}
}

func samePanel(t *testing.T, what string, trans bool, sz [3]int, got, want []float32) {
	t.Helper()
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s trans=%v %v: [%d] = %g, widened first %g", what, trans, sz, i, got[i], want[i])
		}
	}
}

// TestWidenCols checks widenCols (assembly for bfloat16 where the CPU has
// AVX2) bit for bit against its Go twin and the closed form (bits << 16)
// over every bfloat16 pattern, in panels of 8, 16 and 32 runs, depths
// with and without a tail of fewer than 8, runs starting at every
// alignment; nothing past the k·nr outputs is written.
func TestWidenCols(t *testing.T) {
	for _, nr := range []int{8, 16, 32} {
		for _, k := range []int{8, 13, 1 << 16 / nr / 8 * 8} {
			ld := k + 3
			h := make([]uint16, 1+nr*ld)
			for i := range h {
				h[i] = uint16(i * 40503) // every pattern when len(h) ≥ 65536
			}
			for _, bf16 := range []bool{true, false} {
				got := make([]float32, k*nr+1)
				want := make([]float32, k*nr+1)
				got[k*nr], want[k*nr] = -7, -7
				widenCols(got, h, 1, ld, k, nr, bf16)
				widenColsGo(want, h, 1, ld, k, nr, bf16)
				for i := range got {
					g, w := math.Float32bits(got[i]), math.Float32bits(want[i])
					if g != w {
						t.Fatalf("bf16=%v nr=%d k=%d: [%d] = %#08x, Go twin %#08x", bf16, nr, k, i, g, w)
					}
					if p, c := i/nr, i%nr; bf16 && i < k*nr && g != uint32(h[1+c*ld+p])<<16 {
						t.Fatalf("nr=%d k=%d: [%d] = %#08x, want %#08x", nr, k, i, g, uint32(h[1+c*ld+p])<<16)
					}
				}
			}
		}
	}
}
