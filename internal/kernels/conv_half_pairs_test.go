package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

const pairSentinel = 0xDEADBEEF

// TestPairPanels checks pairPanelsAVX512 against its Go twin, word for
// word over the whole buffer, for 1–32 runs (some without a high half)
// over 1–100 columns, each run holding only the columns its random or
// full masks let in (a window, possibly empty), and two panel gaps.
func TestPairPanels(t *testing.T) {
	if !CPU.AVX512 {
		t.Skip("no AVX-512: pairPanels runs in Go only")
	}
	rng := rand.New(rand.NewPCG(60, 5))
	for _, gap := range []int{32 * 32, 32*33 + 16} {
		for pairs := 1; pairs <= 32; pairs += 1 + pairs/4 {
			for n := 1; n <= 100; n += 1 + n/8 {
				np := ceilDiv(n, 32)
				runs := make([]pairInput, pairs)
				for i := range runs {
					r := pairInput{mlo: make([]uint32, np), mhi: make([]uint32, np)}
					// Masks that let in columns [a, b) at most, the runs
					// holding just those.
					a, b := rng.IntN(n), n
					if rng.IntN(2) == 0 {
						b = a + rng.IntN(n-a+1)
					}
					for q := range np {
						r.mlo[q], r.mhi[q] = rng.Uint32()|rng.Uint32(), rng.Uint32()|rng.Uint32()
						if n%3 == 0 {
							r.mlo[q], r.mhi[q] = ^uint32(0), ^uint32(0)
						}
					}
					for c := range 32 * np {
						if c < a || c >= b {
							r.mlo[c/32] &^= 1 << (c % 32)
							r.mhi[c/32] &^= 1 << (c % 32)
						}
					}
					r.lo, r.hi, r.slo, r.shi = make([]uint16, b-a), make([]uint16, b-a), a, a
					for x := range r.lo {
						r.lo[x], r.hi[x] = uint16(rng.Uint32()), uint16(rng.Uint32())
					}
					if rng.IntN(4) == 0 {
						r.hi = nil
					}
					runs[i] = r
				}
				size := (np-1)*gap + 32*pairs + 8
				want, got := make([]uint32, size), make([]uint32, size)
				for i := range want {
					want[i], got[i] = pairSentinel, pairSentinel
				}
				pairPanels(want, runs, n, gap)
				if !pairPanelsFast(got, runs, n, gap) {
					t.Fatal("pairPanelsFast declined on AVX-512")
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("pairPanels(pairs=%d, n=%d, gap=%d): word %d = %#x, want %#x", pairs, n, gap, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// pairLayouts are the packed-B layouts im2colPairs is checked in: the
// AMX kernel's and the VDPBF16PS pair kernel's blocking, and a pair
// layout of 64-deep slices (several slices, odd last ones).
var pairLayouts = []*gemmKernel[float32]{
	{name: "amx", mr: 32, nr: 32, mc: 256, kc: 384, nc: 2048, pairs: true, amx: true},
	{name: "pairs", mr: 12, nr: 32, mc: 240, kc: 384, nc: 2048, pairs: true},
	{name: "pairs-kc64", mr: 12, nr: 32, mc: 240, kc: 64, nc: 2048, pairs: true},
}

// TestIm2colPairs checks that im2colPairs writes, word for word (the
// buffers prefilled with a sentinel), what packB makes of the 16-bit
// im2col tile of every forward unit, slice by slice: over convPathShapes
// (plus deep and wide ones) and random shapes, tiles of the default size,
// one row and 100 elements (direct rows, bands, samples side by side,
// permutation tables), each layout, and scratch of two rows and more,
// pairing in assembly and in Go (whose bounds checks show that no mask
// lets in a column outside its run, which the assembly relies on).
func TestIm2colPairs(t *testing.T) {
	defer func(shapes []ConvArgs) { convPathShapes = shapes }(convPathShapes)
	convPathShapes = append(append([]ConvArgs{}, convPathShapes...),
		ConvArgs{N: 2, C: 45, H: 9, W: 8, K: 3, R: 3, S: 3, PadH: 1, PadW: 1},
		ConvArgs{N: 1, C: 3, H: 40, W: 40, K: 2, R: 3, S: 3, PadH: 1, PadW: 1},
		ConvArgs{N: 1, C: 50, H: 6, W: 7, K: 2, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1})
	settings := []convSetting{{convTile, convPart, convDWSmall}, {1, convPart, convDWSmall}, {100, convPart, convDWSmall}}
	rng := rand.New(rand.NewPCG(60, 2))
	forConvShapes(t, rng, settings, 40, func(t *testing.T, p ConvArgs, _, _, _ []float64) {
		x := make([]uint16, p.N*p.C*p.H*p.W)
		for i := range x {
			x[i] = uint16(rng.Uint32())
		}
		defer func() { pairPanelsAsm = true }()
		for _, kn := range pairLayouts {
			for _, rows := range []int{2, 6, 0} {
				for _, asm := range []bool{true, false} {
					if !asm && raceEnabled && rows != 0 {
						continue // the plain run checks the Go packer at every scratch size
					}
					pairPanelsAsm = asm // in Go, every masked-in column is bounds-checked against its run
					checkIm2colPairs(t, p, x, kn, rows)
				}
			}
		}
	})
}

// checkIm2colPairs compares im2colPairs with packB of the tile over every
// forward unit of p (x its 16-bit input), kn's layout, scratch of rows
// rows (0: the default).
func checkIm2colPairs(t *testing.T, p ConvArgs, x []uint16, kn *gemmKernel[float32], rows int) {
	t.Helper()
	j := &convJob[float32]{}
	j.kind, j.p, j.d, j.half = ConvForward, p, p.dims(), true
	j.ha, j.hb = Half16{Bits: x, BF16: true}, Half16{BF16: true}
	j.plan(&j.p, &j.d)
	j.taps.set(&j.p)
	j.usePerm = j.bands == 1 && j.perm.build(&j.p)
	d := &j.d
	for u := range j.units {
		a, _, xo, ns, oh0, oh1 := j.forwardUnit(u)
		nb := a.N
		if nb == 0 || d.pointwise && ns == 1 {
			continue
		}
		tile := make([]uint16, d.crs*nb)
		j.im2col16(tile, x[xo:], ns, d.crs, oh0, oh1)
		// Room for every slice's stride and AMX's 32-deep padding, which
		// this test exercises below amxMinK too.
		step, ncPad := kn.kcFor(d.crs), roundUp(nb, 32)
		size := ceilDiv(d.crs, step) * step * ncPad
		want, got := make([]float32, size), make([]float32, size)
		ww, gw := words(want), words(got)
		for i := range ww {
			ww[i], gw[i] = pairSentinel, pairSentinel
		}
		for pc := 0; pc < d.crs; pc += step {
			packB(kn, want[pc*ncPad:], operand[float32]{h: tile, bf16: true}, 0, nb, false, pc, min(step, d.crs-pc), 0, nb, nil)
		}
		r := rows
		if r == 0 {
			r = max(2, convPairScratch/nb&^1)
		}
		j.im2colPairs(kn, gw, make([]uint16, r*nb+pairMaskWords(&p, nb)), x[xo:], ns, oh0, oh1)
		for i := range ww {
			if gw[i] != ww[i] {
				t.Fatalf("%s %+v unit %d (%d samples, rows %d–%d, scratch %d rows): word %d = %#x, want %#x",
					kn.name, p, u, ns, oh0, oh1, r, i, gw[i], ww[i])
			}
		}
	}
}

// TestConv2dHalfPairB checks that the bfloat16 forward pass gives the
// same bits with its im2col written as pair panels as through the tile
// the driver packs, into float32 and 16-bit outputs, across the shapes
// and tilings of TestIm2colPairs.
func TestConv2dHalfPairB(t *testing.T) {
	if pairKernel(32) == nil {
		t.Skip("no bfloat16 pair kernel on this CPU or build")
	}
	defer func(on bool) { convPairB = on }(convPairB)
	settings := []convSetting{{convTile, convPart, convDWSmall}, {1, 1, convDWSmall}, {100, 1, convDWSmall}}
	forConvShapes(t, rand.New(rand.NewPCG(60, 3)), settings, 40, func(t *testing.T, p ConvArgs, x, w, _ []float64) {
		hx, _ := half16(x, true)
		hw, _ := half16(w, true)
		var outs [2][]float32
		var bits [2][]uint16
		for i, on := range []bool{false, true} {
			convPairB = on
			outs[i] = make([]float32, p.N*p.K*p.OH*p.OW)
			Conv2dHalf(p, ConvOut{F: outs[i]}, hx, hw, nil)
			bits[i] = make([]uint16, len(outs[i]))
			Conv2dHalf(p, ConvOut{H: Half16{Bits: bits[i], BF16: true}}, hx, hw, nil)
		}
		for i := range outs[0] {
			if outs[1][i] != outs[0][i] || bits[1][i] != bits[0][i] {
				t.Fatalf("%+v: y[%d] = %v (%#x) with pair panels, %v (%#x) without", p, i,
					outs[1][i], bits[1][i], outs[0][i], bits[0][i])
			}
		}
	})
	t.Logf("%s", fmt.Sprint("pair kernel: ", pairKernel(32).name))
}
