package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestGemmHalfBF16 checks the bfloat16 epilogue against its definition:
// GemmHalfBias then dtype.F32ToBF16 (the scalar rounding) of every
// element of C, bit for bit, over shapes on the AMX kernel (in place and
// packed A, several kc slices), the pair kernel (K < 32), the widening
// kernel (binary16 A), with bias, every beta, batches, padded rows
// (whose gaps out must keep), whole tiles of one-slice beta-0 products
// narrowed from the scratch tile (A in place and packed, with and without
// a bias, on the AMX and the pair kernel) and the K = 0 and alpha = 0
// paths.
func TestGemmHalfBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	cases := []gemmCase{
		{m: 300, n: 100, k: 1024, alpha: 1, beta: 0.3, batch: 1, pad: [3]int{5, 0, 2}, off: [3]int{3, 1, 0}},
		{ta: true, m: 70, n: 65, k: 801, alpha: 1, beta: 1, batch: 1, pad: [3]int{0, 1, 3}},
		{tb: true, m: 33, n: 17, k: 20, alpha: 1, beta: 0, batch: 3, pad: [3]int{0, 0, 1}, off: [3]int{0, 0, 2}},
		{m: 5, n: 7, k: 3, alpha: 1, beta: 0.5, batch: 2},
		{m: 64, n: 64, k: 0, alpha: 1, beta: 0.5, batch: 1, pad: [3]int{0, 0, 4}},
		{m: 40, n: 40, k: 40, alpha: 0, beta: 0, batch: 1},
		{m: 96, n: 96, k: 64, alpha: 0.5, beta: 0, batch: 1},
		{m: 128, n: 96, k: 256, alpha: 1, beta: 0, batch: 1, pad: [3]int{0, 0, 3}},
		{ta: true, m: 64, n: 64, k: 64, alpha: 1, beta: 0, batch: 1},
		{m: 24, n: 64, k: 16, alpha: 1, beta: 0, batch: 1},
		{m: 36, n: 64, k: 16, alpha: 1, beta: 0, batch: 1},
	}
	for i, tc := range cases {
		g, ah, bh, c := bf16CaseInputs(r, tc)
		aBF16 := i != 6 // the last takes binary16 A on the widening kernel
		var bias []float32
		if i%2 == 0 {
			bias = gemmToT[float32](gemmRand(r, tc.n))
		}
		want := append([]float32(nil), c...)
		GemmHalfBias(g, ah, bh, aBF16, true, bias, want)
		wantOut := make([]uint16, len(c))
		for j := range wantOut {
			wantOut[j] = uint16(0xA5A5 + j)
		}
		gotOut := append([]uint16(nil), wantOut...)
		written := make([]bool, len(c))
		for bi := range max(g.Batch, 1) {
			for row := range g.M {
				at := g.OffC + bi*g.StrideC + row*g.LdC
				for x := at; x < at+g.N; x++ {
					wantOut[x], written[x] = dtype.BF16FromF32(want[x]), true
				}
			}
		}
		got := append([]float32(nil), c...)
		GemmHalfBF16(g, ah, bh, aBF16, true, bias, got, gotOut)
		for j := range gotOut {
			if gotOut[j] != wantOut[j] {
				t.Fatalf("%v: out[%d] = %#04x, want %#04x (written %v)", tc, j, gotOut[j], wantOut[j], written[j])
			}
		}
	}
}

// TestNarrowTile checks narrowTile (one assembly call for tiles 32 wide)
// against dtype.BF16FromF32 on every upper half of the float32 bits, each
// with the low halves at and around the rounding midpoint (ties both
// ways, NaN payloads, denormals, infinities), in tiles of 32 columns and
// one to 32 rows at a row distance of 37, and that it writes nothing
// outside the tile.
func TestNarrowTile(t *testing.T) {
	const ldc = 37
	lows := []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0xffff}
	var vals []float32
	for hi := range uint32(1 << 16) {
		for _, lo := range lows {
			vals = append(vals, math.Float32frombits(hi<<16|lo))
		}
	}
	c := make([]float32, 32*ldc)
	out := make([]uint16, len(c))
	for i, rows := 0, 1; i < len(vals); rows = rows%32 + 1 {
		for j := range out {
			out[j] = 0xBEEF
		}
		for r := range rows {
			for x := range 32 {
				c[r*ldc+x] = vals[(i+r*32+x)%len(vals)]
			}
		}
		narrowTile(out, c, 0, ldc, rows, 32)
		for j, v := range out {
			want := uint16(0xBEEF)
			if j/ldc < rows && j%ldc < 32 {
				want = dtype.BF16FromF32(c[j])
			}
			if v != want {
				t.Fatalf("rows %d: out[%d] = %#04x for %#08x, want %#04x", rows, j, v, math.Float32bits(c[j]), want)
			}
		}
		i += rows * 32
	}
}

// TestGemmHalfOutStrided checks a blocked GEMM's bfloat16 out with its
// own offset and row stride (halfOut.ld ≠ LdC, as a convolution's y band
// narrowed from the unit's float32 tile): every element (r, x) of C is
// dtype.BF16FromF32 of GemmHalfBias's at out[off + r·ld + x], and nothing
// else of out is written, over one-slice whole tiles (narrowed from the
// scratch tile), edge tiles and several kc slices, on the pair kernel
// where the CPU has one and on the widening kernel.
func TestGemmHalfOutStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	cases := []gemmCase{
		{m: 36, n: 64, k: 16, alpha: 1, batch: 1},
		{m: 30, n: 70, k: 64, alpha: 1, batch: 1, pad: [3]int{0, 0, 5}, off: [3]int{0, 0, 3}},
		{m: 25, n: 100, k: 900, alpha: 1, batch: 1},
		{ta: true, m: 64, n: 96, k: 40, alpha: 0.5, batch: 1},
	}
	for _, tc := range cases {
		for _, aBF16 := range []bool{true, false} {
			g, ah, bh, c := bf16CaseInputs(r, tc)
			want := append([]float32(nil), c...)
			GemmHalfBias(g, ah, bh, aBF16, true, nil, want)
			out := halfOut{off: 11, ld: g.N + 9}
			out.bits = make([]uint16, out.off+g.M*out.ld)
			for j := range out.bits {
				out.bits[j] = 0xBEEF
			}
			a := operand[float32]{h: ah, bf16: aBF16}
			b := operand[float32]{h: bh, bf16: true}
			gemmBlockedOut(halfKernel(g, aBF16, true), &sgemmJobs, g, nil, a, b, nil, c, out)
			for j, v := range out.bits {
				w := uint16(0xBEEF)
				if rel := j - out.off; rel >= 0 && rel%out.ld < g.N {
					w = dtype.BF16FromF32(want[g.OffC+rel/out.ld*g.LdC+rel%out.ld])
				}
				if v != w {
					t.Fatalf("%v aBF16=%v: out[%d] = %#04x, want %#04x", tc, aBF16, j, v, w)
				}
			}
		}
	}
}
