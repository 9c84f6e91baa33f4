package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// panelGrid returns small convolutions over every combination of kernel
// size, stride, padding and dilation (per axis), with planes and filter
// counts that are not multiples of any tile, plus groups and a few
// larger shapes: a depth of several kc slices (C/G·R·S past 512), a
// weight gradient of several depth slices (band columns past 512), and a
// GEMM big enough to be shared by the workers.
func panelGrid() []ConvArgs {
	var ps []ConvArgs
	for _, r := range []int{1, 2, 3} {
		for _, s := range []int{1, 3} {
			for _, sh := range []int{1, 2, 3} {
				for _, sw := range []int{1, 2} {
					for _, ph := range []int{0, 1, 2} {
						for _, pw := range []int{0, 1} {
							for _, dil := range []int{1, 2} {
								ps = append(ps, ConvArgs{N: 2, C: 3, H: 7, W: 9, K: 5, R: r, S: s,
									StrideH: sh, StrideW: sw, PadH: ph, PadW: pw, DilH: dil, DilW: 3 - dil})
							}
						}
					}
				}
			}
		}
	}
	return append(ps,
		ConvArgs{N: 3, C: 4, H: 6, W: 6, K: 6, R: 3, S: 3, PadH: 1, PadW: 1, Groups: 2},
		ConvArgs{N: 2, C: 3, H: 5, W: 11, K: 3, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, Groups: 3},
		ConvArgs{N: 5, C: 6, H: 3, W: 3, K: 9, R: 1, S: 1, Groups: 3},
		ConvArgs{N: 2, C: 70, H: 12, W: 13, K: 20, R: 3, S: 3, PadH: 1, PadW: 1},
		ConvArgs{N: 1, C: 2, H: 40, W: 37, K: 7, R: 3, S: 3, PadH: 1, PadW: 1},
		ConvArgs{N: 1, C: 64, H: 16, W: 16, K: 64, R: 3, S: 3, PadH: 1, PadW: 1},
		ConvArgs{N: 9, C: 33, H: 4, W: 4, K: 40, R: 3, S: 3, PadH: 1, PadW: 1},
	)
}

// TestConv2dPanels checks that the forward pass and the weight gradient
// give the same bits with im2col written straight into B's panels as
// through the dense tile (convPanels false), over panelGrid, on every
// float32 GEMM kernel this CPU runs (the AVX-512 12×32, the AVX2 6×16,
// the Go kernels of both shapes) and in float64, under the default tiling,
// with one output row per band, with the weight gradient split into
// blocks of dw's columns, and split across the workers.
func TestConv2dPanels(t *testing.T) {
	defer func(tile, cols, part, small int, saved gemmKernel[float32]) {
		convTile, convMinCols, convPart, convDWSmall, sgemm, convPanels = tile, cols, part, small, saved, true
	}(convTile, convMinCols, convPart, convDWSmall, sgemm)
	kernels, _ := sgemmAsmKernels()
	kernels = append(kernels, sgemmGoKernel, go12x32)
	shapes := panelGrid()
	rng := rand.New(rand.NewPCG(21, 22))
	cols := convMinCols
	for _, s := range []convSetting{{convTile, convPart, convDWSmall}, {1, convPart, convDWSmall}, {convTile, 1, 0}} {
		convTile, convMinCols, convPart, convDWSmall = s.tile, min(s.tile, cols), s.part, s.small
		for _, kn := range kernels {
			sgemm = kn
			for i, p := range shapes {
				p = convShape(p)
				x := randSlice(rng, p.N*p.C*p.H*p.W)
				w := randSlice(rng, p.K*p.C/p.Groups*p.R*p.S)
				dy := randSlice(rng, p.N*p.K*p.OH*p.OW)
				name := fmt.Sprintf("tile%d_small%d/%s/%d", s.tile, s.small, kn.name, i)
				samePanels(t, name, p, to32(x), to32(w), to32(dy))
				if kn.name == kernels[0].name {
					samePanels(t, name+"/f64", p, x, w, dy)
				}
			}
		}
	}
}

// samePanels runs Conv2d and Conv2dGradWeight with and without panels and
// fails on the first output whose bits differ.
func samePanels[T Float](t *testing.T, name string, p ConvArgs, x, w, dy []T) {
	t.Helper()
	var outs [2][2][]T
	op := ConvF32
	if _, f64 := any(x[0]).(float64); f64 {
		op = ConvF64
	}
	for k, on := range []bool{false, true} {
		convPanels = on
		o := &outs[k]
		o[0], o[1] = nanSlice[T](len(dy)), nanSlice[T](len(w))
		Conv2d(p, o[0], x, w, nanSlice[T](ConvWorkspace(ConvForward, p, op)))
		Conv2dGradWeight(p, o[1], dy, x, nanSlice[T](ConvWorkspace(ConvGradWeight, p, op)))
	}
	convPanels = true
	for pass, what := range []string{"Conv2d", "Conv2dGradWeight"} {
		for e, v := range outs[1][pass] {
			if want := outs[0][pass][e]; math.Float64bits(float64(v)) != math.Float64bits(float64(want)) {
				t.Fatalf("%s %+v: %s [%d] = %v on panels, %v dense", name, p, what, e, v, want)
			}
		}
	}
}

// packWholeBRef packs op(B) of g (its K×N) into wholeBSize's layout with
// the driver's packB, slice by slice.
func packWholeBRef[T Float](kn *gemmKernel[T], g GemmArgs, b []T) []T {
	np, step := roundUp(g.N, kn.nr), kn.kcFor(g.K)
	dst := make([]T, wholeBSize(kn, g.K, g.N))
	for pc := 0; pc < g.K; pc += step {
		kc := min(step, g.K-pc)
		packB(kn, dst[pc*np:], operand[T]{f: b}, g.OffB, g.LdB, g.TransB, pc, kc, 0, g.N, nil)
	}
	return dst
}

// TestGemmPackedB checks gemmPackedB against gemmBlocked bit for bit on
// every float32 kernel: shapes with edges in every dimension, depths of
// several kc slices, both transposes of B and every beta, and products
// large enough that the workers share them (several compute tasks over
// the caller's B, with and without a prepacked A).
func TestGemmPackedB(t *testing.T) {
	kernels, _ := sgemmAsmKernels()
	kernels = append(kernels, sgemmGoKernel, go12x32)
	rng := rand.New(rand.NewPCG(23, 24))
	var jobs freeList[gemmJob[float32]]
	for _, kn := range kernels {
		for _, s := range [][3]int{{1, 1, 1}, {13, 33, 7}, {25, 70, 513}, {7, 300, 1100}, {200, 257, 600}, {64, 256, 576}} {
			for _, tb := range []bool{false, true} {
				for _, beta := range []float64{0, 1, 0.5} {
					m, n, k := s[0], s[1], s[2]
					g := GemmArgs{M: m, N: n, K: k, Alpha: 1, Beta: beta, TransB: tb, LdA: k, LdB: n, LdC: n + 3}
					rowsB := k
					if tb {
						g.LdB, rowsB = k+2, n
					}
					a, b := to32(randSlice(rng, m*k)), to32(randSlice(rng, rowsB*g.LdB))
					c0 := to32(randSlice(rng, m*g.LdC))
					want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
					gemmBlocked(&kn, &jobs, g, operand[float32]{f: a}, operand[float32]{f: b}, want)
					gemmPackedB(&kn, &jobs, g, nil, operand[float32]{f: a}, packWholeBRef(&kn, g, b), got)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s %+v: c[%d] = %v, want %v", kn.name, g, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}
