package cpu

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// gemmChunk is the most float32 elements of a 16-bit C that one GEMM call
// widens at a time (4 MiB): C is computed a band of rows at a time through
// one reused buffer, so no float32 copy of the output is made on the Go
// heap, whatever its size.
const gemmChunk = 1 << 20

// chunks holds the reused gemmChunk buffers, one per GEMM in flight, kept
// (unlike a sync.Pool's, which a garbage collection drops and the next GEMM
// allocates again).
var chunks kernels.FreeList[[gemmChunk]float32]

// gemmHalfRows reports whether g — a 16-bit C from 16-bit A and B, one
// matrix — is computed by bands of rows through a reused buffer: whenever
// a band of at least one row fits in it (a C that fits is one band). Each
// element's sum is the same either way: with 16-bit operands GemmHalf
// always takes the blocked path, whose result does not depend on M.
func gemmHalfRows(g device.Gemm) bool {
	return g.C.DType.IsLowPrecision() && g.A.DType.IsLowPrecision() && g.B.DType.IsLowPrecision() &&
		max(g.Batch, 1) == 1 && g.M > 0 && g.N > 0 && g.N <= gemmChunk && g.LdC <= gemmChunk
}

// gemmHalfBands runs g (gemmHalfRows) band by band: each band's rows of C
// are widened into the buffer (only when beta reads them, or the band has
// gaps between rows that a second pass would write back), multiplied into
// it and narrowed back. A bfloat16 C is narrowed by the GEMM itself, tile
// by tile (kernels.GemmHalfBF16), with the same rounding.
func gemmHalfBands(g device.Gemm, args kernels.GemmArgs, bias []float32) {
	buf := chunks.Get()
	defer chunks.Put(buf)
	rows := max(1, (gemmChunk-g.N)/g.LdC+1)
	a, b := dtype.AsU16(g.A.Block.Bytes()), dtype.AsU16(g.B.Block.Bytes())
	aStep := g.LdA // op(A)'s rows are A's rows, or its columns when transposed
	if g.TransA {
		aStep = 1
	}
	sz := g.C.DType.Size()
	for r0 := 0; r0 < g.M; r0 += rows {
		band := args
		band.M = min(rows, g.M-r0)
		band.OffA += r0 * aStep
		lo := g.C.Off + r0*g.LdC
		c := buf[:(band.M-1)*g.LdC+g.N]
		cb := g.C.Block.Bytes()[lo*sz : (lo+len(c))*sz]
		out, direct := halves(cb)
		direct = direct && g.C.DType == dtype.BF16
		if g.Beta != 0 || (g.LdC != g.N && !direct) {
			toF32(c, g.C.DType, cb)
		}
		band.OffC = 0
		aBF16, bBF16 := g.A.DType == dtype.BF16, g.B.DType == dtype.BF16
		if direct {
			kernels.GemmHalfBF16(band, a, b, aBF16, bBF16, bias, c, out)
			continue
		}
		kernels.GemmHalfBias(band, a, b, aBF16, bBF16, bias, c)
		putAt32(g.C, lo, c)
	}
}
