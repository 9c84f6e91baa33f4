package kernels

// ConvArgs describes a 2-D convolution in NCHW layout (see device.Conv2d):
// input (N, C, H, W), weight (K, C/Groups, R, S), output (N, K, OH, OW).
// All slices passed with it are contiguous and start at their first element.
type ConvArgs struct {
	N, C, H, W       int
	K, R, S          int
	StrideH, StrideW int
	PadH, PadW       int
	DilH, DilW       int
	Groups           int
	OH, OW           int
}

// Pointwise reports whether the convolution is 1×1, stride 1 and unpadded:
// then a group of one sample is already the GEMM operand and no im2col is
// needed.
func (p ConvArgs) Pointwise() bool {
	return p.R == 1 && p.S == 1 && p.StrideH == 1 && p.StrideW == 1 && p.PadH == 0 && p.PadW == 0
}

// convDims are the per-group GEMM sizes of a convolution.
type convDims struct {
	cg, kg    int // channels and filters per group
	hw, ohw   int // input and output plane sizes
	crs       int // rows of one group's im2col matrix: cg·R·S
	xs, ys    int // elements of one sample of x and y
	wg        int // elements of one group's filters: kg·crs
	pointwise bool
}

func (p ConvArgs) dims() convDims {
	cg, kg := p.C/p.Groups, p.K/p.Groups
	return convDims{
		cg: cg, kg: kg, hw: p.H * p.W, ohw: p.OH * p.OW, crs: cg * p.R * p.S,
		xs: p.C * p.H * p.W, ys: p.K * p.OH * p.OW, wg: kg * cg * p.R * p.S,
		pointwise: p.Pointwise(),
	}
}

// The three kernels below share one driver (conv_job.go). Each cuts its
// work into independent units, which the workers claim one at a time, and
// each unit runs GEMMs on one goroutine over *tiles* of the im2col matrix:
// the rows of some channels by the columns of a band of output rows,
// small enough to stay in L2 where the shape allows (see convTile). The
// float forward pass and weight gradient write a tile straight into the
// GEMM's packed B panels, through a staging block in L1, and the GEMM packs
// no B (conv_panel.go). All
// the memory the kernels hold beyond their arguments is in ws, sized by
// ConvWorkspace (conv_ws.go): the filters the forward pass and the input
// gradient pack once per call (pack_whole.go), the weight gradient's
// per-chunk copies of a small dw (plus one float32 dw when dw is 16-bit,
// conv_half.go) and one tile for each of at most ConvSlots() workers; a
// shorter ws panics, and a nil one takes a reused Go-heap buffer instead
// (for callers outside a device). Units and tiles depend on the
// convolution only, never on the number of workers, and partial sums are
// added in a fixed order, so results are deterministic.

// Conv2d writes y (N, K, OH, OW) = x (N, C, H, W) ⋆ w (K, C/G, R, S). A
// unit is a band of output rows of one sample and group: im2col of the
// band into a tile, then one GEMM y_band (K/G × band) = w_g (K/G ×
// C/G·R·S) · tile (over small planes, of several samples side by side,
// into a tile then copied to y). Pointwise convolutions read x directly,
// except over planes of fewer than 64 outputs, whose samples they gather
// side by side like the others. ws holds ConvWorkspace(ConvForward, p,
// ConvF32 or ConvF64) elements, or is nil; the gradients' likewise.
func Conv2d[T Float](p ConvArgs, y, x, w, ws []T) {
	runConvJob(ConvForward, p, y, x, w, ws)
}

// Conv2dGradInput writes dx (N, C, H, W), overwriting it, from dy (N, K,
// OH, OW) and w. A unit is a block of input channels of one sample and
// group (over small planes, of several samples, their dy rows gathered
// side by side): per band of output rows, tile = w_g[:, block]ᵀ ·
// dy_band, then col2im adds each tile entry back to the input position it
// was read from (overlapping windows accumulate). Pointwise convolutions write
// dx = w_gᵀ · dy_g directly, except over planes of fewer than 64 outputs
// (as in Conv2d), whose samples they gather side by side, copying each
// tile column back.
// Over several samples a block of channels has packed float32 or float64
// filters of about 512 KiB (filterBlock), and a block's units follow each
// other, so that a worker reuses them from L2.
func Conv2dGradInput[T Float](p ConvArgs, dx, dy, w, ws []T) {
	runConvJob(ConvGradInput, p, dx, dy, w, ws)
}

// Conv2dGradWeight writes dw (K, C/G, R, S), overwriting it, from dy and x.
// A unit is one group's dw, or a block of its columns (rows of the im2col
// matrix) when dw is large, over a chunk of the samples, or all of them
// when dw is large: over the samples and bands in order, dw_block +=
// dy_band · tileᵀ (the first product overwrites; over small planes one
// product takes several samples' bands side by side); the chunks' copies of dw
// are then added in chunk order.
func Conv2dGradWeight[T Float](p ConvArgs, dw, dy, x, ws []T) {
	runConvJob(ConvGradWeight, p, dw, dy, x, ws)
}

// convRange returns the outputs o in [0, n) whose input position o·stride+off
// lies in [0, size), as the half-open range [lo, hi).
func convRange(off, stride, size, n int) (lo, hi int) {
	if off < 0 {
		lo = (-off + stride - 1) / stride
	}
	if last := size - 1 - off; last >= 0 {
		hi = min(n, last/stride+1)
	}
	if lo > hi {
		lo = hi
	}
	return lo, hi
}
