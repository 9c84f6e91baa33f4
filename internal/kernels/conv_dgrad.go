package kernels

// The input gradient of a stride-1 convolution as a forward convolution:
// dx[c, h, w] = Σ dy[k, h+ph−r·dh, w+pw−s·dw] · w[k, c, r, s] is the
// forward pass of dy (K channels of OH×OW) with the filters transposed
// and flipped, w'[c, k, R−1−r, S−1−s] = w[k, c, r, s], and padding
// dh·(R−1)−ph (dw·(S−1)−pw), whose output is H×W. Its im2col tiles gather
// dy instead of col2im scattering into dx, and its GEMMs run over depth
// K/G·R·S instead of K/G, and over several samples per unit when the
// planes are small (plan's spu), where col2im's GEMMs, one per sample,
// would be narrower than the micro-kernels. It runs where that pays:
// ResNet-18's 4×4×512 layer at batch 32 (BenchmarkConvVsGemm, shared
// machine, same run) took 0.65–0.70 of a same-FLOP GEMM's rate this way
// against 0.31–0.35 through col2im in F32 (0.66–0.74 against 0.69–0.74 on
// bfloat16), but 8×8×256 took 0.92–0.95 against 1.2–2.2, and the 16×16
// and 32×32 layers were slower too (32×32×64: 130–149 against 175
// GFLOP/s). The flipped filters are built once per call in
// a reused Go-heap buffer (K·C/G·R·S elements, freed to the buffer list
// at the end of the call) and packed like the forward pass's.

// convDirectGrad enables directGradInput (a variable so that the
// benchmarks can time the col2im path beside it).
var convDirectGrad = true

// directGradInput reports whether p's input gradient runs as the forward
// convolution transposed returns: stride 1, not pointwise (that is one
// GEMM already), output planes narrower than convNarrow, and the
// transposed convolution's im2col matrix no larger than p's (Workspace
// still bounds its tiles).
func (p ConvArgs) directGradInput() bool {
	return convDirectGrad && p.StrideH == 1 && p.StrideW == 1 && !p.Pointwise() && p.OH > 0 && p.OW > 0 &&
		p.OH*p.OW < convNarrow && p.transposed().Workspace() <= p.Workspace()
}

// convNarrow is the width of the float32 and bfloat16 micro-kernels
// (12×32): a GEMM over fewer columns leaves part of every panel idle.
const convNarrow = 32

// transposed is the forward convolution that computes stride-1 p's input
// gradient: dy in, dx out, over the filters flipFilters writes.
func (p ConvArgs) transposed() ConvArgs {
	return ConvArgs{
		N: p.N, C: p.K, H: p.OH, W: p.OW, K: p.C, R: p.R, S: p.S, StrideH: 1, StrideW: 1,
		PadH: p.DilH*(p.R-1) - p.PadH, PadW: p.DilW*(p.S-1) - p.PadW, DilH: p.DilH, DilW: p.DilW,
		Groups: p.Groups, OH: p.H, OW: p.W,
	}
}

// flipFilters writes into dst (C, K/G, R, S) p's filters w (K, C/G, R, S)
// transposed within each group and flipped in both kernel axes.
func flipFilters[T convElem](p *ConvArgs, dst, w []T) {
	kg, cg, rs := p.K/p.Groups, p.C/p.Groups, p.R*p.S
	for g := range p.Groups {
		for k := range kg {
			for c := range cg {
				src := w[((g*kg+k)*cg+c)*rs:][:rs]
				out := dst[((g*cg+c)*kg+k)*rs:][:rs]
				for i, v := range src {
					out[rs-1-i] = v
				}
			}
		}
	}
}

// withFlipped calls f with p's filters w flipped (flipFilters) in a
// reused buffer.
func withFlipped[T convElem](p *ConvArgs, w []T, f func(wt []T)) {
	buf := convBufs.get()
	wt := scratchView[T](&buf.b, len(w))
	flipFilters(p, wt, w)
	f(wt)
	convBufs.put(buf)
}
