package kernels

// The direct route: a bfloat16 forward convolution that convDirectBF16
// computes faster than the im2col route (BenchmarkConvDirect, Zen 5,
// batch 32: 32×32×64 1.46–1.48×, 16×16×128 1.11–1.22×, 8×8×256
// 1.12–1.13×, 4×4×512 1.01–1.06×, so planes from dxMinPlane outputs) on
// the VDPBF16PS pair kernel (an AMX machine keeps its AMX route,
// unmeasured against it), inside the workspace the im2col route was given
// (memory first: ConvWorkspace does not change, and a call whose direct
// scratch would not fit runs the im2col route). Through conv_flip.go it
// also computes the stride-1 input gradients that flipGradInput takes.

// convDirectOn turns the route on (a variable so that the tests and
// benchmarks can compare it with the im2col route).
var convDirectOn = true

const (
	dxMinPlane    = 64 // H·W from which the route pays
	dxMinChannels = 16 // input channels from which it was measured
)

// useDirect says whether the forward convolution p of x by w into y
// takes the direct route.
func useDirect(p ConvArgs, y ConvOut, x, w Half16) bool {
	if !convDirectOn || !x.BF16 || !w.BF16 || dxAsm() == nil || p.C < dxMinChannels || p.H*p.W < dxMinPlane {
		return false
	}
	if kn := pairKernel(9 * p.C); kn == nil || kn.amx {
		return false
	}
	if p.R != 3 || p.S != 3 || p.StrideH != 1 || p.StrideW != 1 || p.PadH != 1 || p.PadW != 1 ||
		p.DilH != 1 || p.DilW != 1 || p.Groups != 1 || p.OH != p.H || p.OW != p.W || p.N < 1 || p.K < 1 {
		return false
	}
	return convDirectBF16Words(p, y.F == nil) <= ConvWorkspace(ConvForward, p, ConvHalf)-convAlign
}

// The direct weight gradient (conv_dw.go) pays from planes of dwMinPlane
// outputs with dwMinChannels input channels (BenchmarkConvDirectWGrad,
// Zen 5, batch 32: 32×32×64 1.60–1.65×, 64×64×64 1.52–1.67×, but
// 16×16×128 0.86–0.90× and 8×8×256 0.84–0.91×).
const (
	dwMinPlane    = 1024
	dwMinChannels = 32
)

// useDirectWGrad says whether the weight gradient p of dy and x into dw
// takes the direct route: bfloat16 operands, the VDPBF16PS pair kernel
// without AMX (unmeasured against its route there), the 3×3 stride-1
// pad-1 shape, and one sample pair's scratch within the im2col route's
// workspace.
func useDirectWGrad(p ConvArgs, dy, x Half16) bool {
	if !convDirectOn || !dy.BF16 || !x.BF16 || sbgemm == nil || amxgemm != nil ||
		p.C < dwMinChannels || p.H*p.W < dwMinPlane || p.N < 2 {
		return false
	}
	if p.R != 3 || p.S != 3 || p.StrideH != 1 || p.StrideW != 1 || p.PadH != 1 || p.PadW != 1 ||
		p.DilH != 1 || p.DilW != 1 || p.Groups != 1 || p.OH != p.H || p.OW != p.W || p.K < 1 {
		return false
	}
	return convDirectWGradWords(p, 1) <= ConvWorkspace(ConvGradWeight, p, ConvHalf)-convAlign
}

// convDirectWGradIn runs the weight gradient on the direct route in ws
// (ConvWorkspace's words, or nil for a pooled buffer), as many sample
// pairs at a time as that holds.
func convDirectWGradIn(p ConvArgs, dw ConvOut, dy, x Half16, ws []float32) {
	need := ConvWorkspace(ConvGradWeight, p, ConvHalf)
	ws, buf := convScratch(ConvGradWeight.String(), ws, need)
	convDirectWGrad(p, dw, dy.Bits, x.Bits, ws[:need-convAlign]) // the same pairs a chunk, however ws is aligned
	if buf != nil {
		convBufs.put(buf)
	}
}

// conv2dDirect runs the forward convolution on the direct route in ws
// (ConvWorkspace's words, or nil for a pooled buffer).
func conv2dDirect(p ConvArgs, y ConvOut, x, w Half16, ws []float32) {
	ws, buf := convScratch(ConvForward.String(), ws, ConvWorkspace(ConvForward, p, ConvHalf))
	convDirectBF16(p, y, x.Bits, w.Bits, ws)
	if buf != nil {
		convBufs.put(buf)
	}
}
