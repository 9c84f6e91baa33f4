package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkGEMMTileRuns times float32 products with the AVX2 kernel's
// runs of tiles down each column (the default), tile by tile (xPerTile:
// gemmTileRuns off) and with runs across each row (xAcross), in turn in
// one loop: ResNet-18's conv GEMMs and the 1024³ squares
// (resnet18GemmShapes), GPT-2-small's linear layers with a bias
// (GemmBias, 4096 tokens), then the F32 passes of ResNet-18's 3×3
// convolutions at batch 32. It reports the default's best GFLOP/s and
// the others' best time and processor time over it (benchTurns).
func BenchmarkGEMMTileRuns(b *testing.B) {
	if sgemm.tiles == nil {
		b.Skipf("the float32 kernel %s has no runs of tiles", sgemm.name)
	}
	base := sgemm
	defer func() { sgemm, gemmTileRuns = base, true }()
	set := func(i int) {
		sgemm, gemmTileRuns = base, i != 1
		sgemm.tilesDown = i != 2
	}
	names := []string{"xPerTile", "xAcross"}
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range resnet18GemmShapes {
		g, la, lb, lc := s.args()
		x, y, c := benchF32(r, la), benchF32(r, lb), make([]float32, lc)
		b.Run("gemm_"+s.name, func(b *testing.B) { benchTurns(b, s.flops(), func() { Gemm(g, x, y, c) }, names, set) })
	}
	for _, s := range []gemmBench{{name: "linear_4096x768x768", tb: true, m: 4096, n: 768, k: 768},
		{name: "linear_4096x3072x768", tb: true, m: 4096, n: 3072, k: 768}} {
		g, la, lb, lc := s.args()
		x, y, bias, c := benchF32(r, la), benchF32(r, lb), benchF32(r, s.n), make([]float32, lc)
		b.Run("gemmbias_"+s.name, func(b *testing.B) {
			benchTurns(b, s.flops(), func() { GemmBias(g, x, y, bias, c) }, names, set)
		})
	}
	for _, c := range resnetStages(32, 32) {
		for i, pass := range []string{"fwd", "dgrad", "wgrad"} {
			b.Run(fmt.Sprintf("conv_%s_%s", pass, c.name), func(b *testing.B) {
				c.alloc(r)
				f := [3]func(){c.forward, c.gradInput, c.gradWeight}[i]
				benchTurns(b, c.flops(), f, names, set)
			})
		}
	}
}
