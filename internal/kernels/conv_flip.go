package kernels

import "unsafe"

// The input gradient as a forward convolution. At stride 1,
//
//	dx[n][c][h][w] = Σ_k,r,s dy[n][k][h+PadH−DilH·r][w+PadW−DilW·s] · w[k][c][r][s]
//
// is the forward convolution of dy (K channels of OH×OW) by the flipped
// filters w'[c][k][R−1−r][S−1−s] = w[k][c][r][s] (per group) with padding
// DilH·(R−1)−PadH and DilW·(S−1)−PadW, which yields C channels of H×W.
// For bfloat16 operands that route is the faster one over large planes:
// its GEMMs are K/G·R·S deep (the input gradient's own are K/G deep, 64
// over ResNet's first stage, short for the AMX tiles), its im2col reads
// 16-bit dy and its output is dx itself, where the input gradient's col
// tile is float32 and col2im passes over it once more. Flipping the
// filters costs a pass over them (0.3–1 ns a value measured, the 512-channel
// filters at the slow end: their C/G write streams share a few cache
// sets), which pays
// only where each filter value serves many outputs: from convFlipMinCols
// outputs per channel, N·OH·OW (BenchmarkConvFlipGradInput, one core:
// ResNet-18's 32×32×64 input gradient 1.34× faster, 16×16×128 1.24×,
// 8×8×256 even, 4×4×512 0.71×). The flipped filters take K·C/G·R·S 16-bit
// values at the start of the workspace (conv_ws.go).

// convFlipMinCols is the fewest outputs per channel (N·OH·OW) for which a
// bfloat16 input gradient takes the flipped route, and convFlipGradInput
// turns the route on: where the deep GEMMs run on AMX (without it, on
// VDPBF16PS, the flipped route measured 0.94–0.99× the kernel over the
// same layers). Variables so that the tests can send small convolutions
// down the route and compare both.
var (
	convFlipMinCols   = 4096
	convFlipGradInput = amxgemm != nil
)

// flipGradInput returns the forward convolution whose output is p's input
// gradient: stride 1 in both directions, not pointwise (that input
// gradient is one GEMM already), at least convFlipMinCols outputs per
// channel, and padding at most the dilated kernel's reach, so that the
// flipped padding is not negative.
func (p ConvArgs) flipGradInput() (ConvArgs, bool) {
	ok := p.StrideH == 1 && p.StrideW == 1 && !p.Pointwise() && p.OH > 0 && p.OW > 0 &&
		p.N*p.OH*p.OW >= convFlipMinCols &&
		p.PadH <= p.DilH*(p.R-1) && p.PadW <= p.DilW*(p.S-1)
	if !ok {
		return p, false
	}
	return ConvArgs{
		N: p.N, C: p.K, H: p.OH, W: p.OW, K: p.C, R: p.R, S: p.S,
		StrideH: 1, StrideW: 1, PadH: p.DilH*(p.R-1) - p.PadH, PadW: p.DilW*(p.S-1) - p.PadW,
		DilH: p.DilH, DilW: p.DilW, Groups: p.Groups, OH: p.H, OW: p.W,
	}, true
}

// flipFilters writes into dst (C × K/G × R × S) the flipped filters of w
// (K × C/G × R × S, p's): dst[g·cg+c][k][R−1−r][S−1−s] = w[g·kg+k][c][r][s].
// It reads w in order and writes C/G streams of dst, one per channel.
func flipFilters(p *ConvArgs, dst, w []uint16) {
	cg, kg, rs := p.C/p.Groups, p.K/p.Groups, p.R*p.S
	_ = dst[p.C*kg*rs-1]
	_ = w[p.K*cg*rs-1]
	for g := range p.Groups {
		for k := range kg {
			src := w[(g*kg+k)*cg*rs:][:cg*rs]
			at := g*cg*kg*rs + k*rs
			if rs == 9 {
				flipRuns9(dst, src, at, kg*rs)
				continue
			}
			for ; len(src) >= rs; src = src[rs:] {
				reverseRun(dst[at:at+rs], src[:rs])
				at += kg * rs
			}
		}
	}
}

// reverseRun writes src reversed into dst (of the same length).
func reverseRun(dst, src []uint16) {
	for i, v := range src {
		dst[len(src)-1-i] = v
	}
}

// flipRuns9 writes each run of nine values of src reversed into dst, the
// first at dst[at], the next step further: reverseRun inlined for the
// 3×3 filters.
func flipRuns9(dst, src []uint16, at, step int) {
	for ; len(src) >= 9; src, at = src[9:], at+step {
		s, d := src[:9:9], dst[at:at+9:at+9]
		d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8] = s[8], s[7], s[6], s[5], s[4], s[3], s[2], s[1], s[0]
	}
}

// gradInputFlipped runs a bfloat16 input gradient as the forward
// convolution q (flipGradInput's) of dy by w's flipped filters, which
// take the start of ws (conv_ws.go).
func gradInputFlipped(p, q ConvArgs, dx ConvOut, dy, w Half16, ws []float32) {
	ws, buf := convScratch(ConvGradInput.String(), ws, ConvWorkspace(ConvGradInput, p, ConvHalf))
	n := flipWords(p)
	wf := unsafe.Slice((*uint16)(unsafe.Pointer(&ws[0])), q.K*q.C/q.Groups*q.R*q.S)
	flipFilters(&p, wf, w.Bits)
	runConvHalf(ConvForward, q, dx, dy, Half16{Bits: wf, BF16: w.BF16}, ws[n:])
	if buf != nil {
		convBufs.put(buf)
	}
}
