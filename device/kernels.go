package device

import "github.com/headroom-ml/headroom/dtype"

// Kernels is the compute seam between the tensor library and a device.
//
// Ops above the device layer never index device memory: they allocate every
// block through the Device (so meta and cpu account identically) and pass
// the blocks here as Operands. Kernels never allocate device memory; scratch
// an algorithm needs is passed in as a workspace operand sized by a function
// of this package (for example Conv2d.Workspace). The cpu device implements
// Kernels with loops over host memory; meta's Kernels is nil, so it computes
// nothing while allocating exactly the same blocks.
//
// Floating-point kernels compute F32 and F64; F16 and BF16 operands are
// computed in F32. Unless a method says otherwise (Copy, Fill, Unary,
// Binary, Axpy, Where and Reduce accept strided inputs), operands are
// contiguous, operands of one call have the same dtype, and an output may
// not overlap an input except where a method allows it.
type Kernels interface {
	// Write copies host bytes (src, in dst's dtype) into a contiguous operand.
	Write(dst Operand, src []byte)
	// Read copies a contiguous operand into host bytes.
	Read(dst []byte, src Operand)
	// Copy copies src into dst element by element, converting the dtype.
	// Both may be strided (dst's strides must not overlap itself); shapes match.
	Copy(dst, src Operand)
	// Fill sets every element of dst (strided allowed) to v.
	Fill(dst Operand, v float64)

	// Unary writes dst = op(src); src may be strided (broadcast), dst may be src.
	Unary(op UnaryOp, dst, src Operand, arg float64)
	// UnaryGrad writes dx = dy·op'(x), given the op's input x and output y
	// (the op reads whichever it needs; see UnaryOp). All contiguous, one shape.
	UnaryGrad(op UnaryOp, dx, dy, x, y Operand, arg float64)
	// Binary writes dst = a op b; a and b are strided to dst's shape (stride 0
	// broadcasts); dst may be a or b when that operand is contiguous.
	// Comparison ops write 1 or 0 in dst's dtype.
	Binary(op BinaryOp, dst, a, b Operand)
	// Axpy adds alpha·x to y in place (same shape; x strided, y contiguous).
	Axpy(alpha float64, x, y Operand)
	// Where writes dst = cond ≠ 0 ? a : b; cond, a, b strided to dst's shape;
	// cond may have any dtype.
	Where(dst, cond, a, b Operand)
	// Reduce reduces src (strided) over the axes where dst (same rank,
	// contiguous) has size 1 and src does not. Var takes arg as the
	// correction (0 population, 1 sample); ArgMax writes I64 indices and
	// reduces exactly one axis.
	Reduce(op ReduceOp, dst, src Operand, arg float64)

	// Gemm computes C = alpha·op(A)·op(B) + beta·C for a batch of matrices.
	Gemm(g Gemm)

	// Softmax writes dst = softmax(src) (or log-softmax) along rows of length
	// cols of contiguous (rows, cols) operands.
	Softmax(dst, src Operand, rows, cols int, log bool)
	// SoftmaxGrad writes dx from dy and the forward output y.
	SoftmaxGrad(dx, dy, y Operand, rows, cols int, log bool)
	// LayerNorm normalises each row of x (rows, cols): y = (x-mean)·rstd·w + b,
	// storing mean and rstd (rows) for backward. w and b (cols) may have a nil
	// Block (no affine).
	LayerNorm(y, mean, rstd, x, w, b Operand, rows, cols int, eps float64)
	// LayerNormGrad writes dx and, when their Blocks are non-nil, dw and db
	// (overwritten, not accumulated).
	LayerNormGrad(dx, dw, db, dy, x, w, mean, rstd Operand, rows, cols int)
	// BatchNorm normalises x (N, C, HW) per channel. In training it uses the
	// batch statistics, stores the batch mean and 1/sqrt(var+eps) in mean and
	// invstd (C, in the compute dtype: F64 for F64, else F32) and updates runMean and runVar (unbiased variance) with
	// momentum; in eval it uses runMean and runVar and still stores the mean
	// and invstd it used. w and b (C) may have a nil Block.
	BatchNorm(y, mean, invstd, x, w, b, runMean, runVar Operand, n, c, hw int, training bool, momentum, eps float64)
	// BatchNormRelu is BatchNorm with ReLU (max(0, ·), +0 for NaN) applied
	// to y as it is written: one pass over x and y instead of two, the same
	// y as BatchNorm followed by Unary(Relu) on it.
	BatchNormRelu(y, mean, invstd, x, w, b, runMean, runVar Operand, n, c, hw int, training bool, momentum, eps float64)
	// BatchNormGrad writes dx and (when non-nil) dw, db. training says whether
	// mean and invstd were batch statistics (their gradient flows) or constants.
	BatchNormGrad(dx, dw, db, dy, x, w, mean, invstd Operand, n, c, hw int, training bool)
	// CrossEntropy writes per-row losses (rows) and the log-sum-exp of each
	// row (rows, F32 or the logits' dtype) for logits (rows, cols) and integer
	// targets (rows). Rows whose target is ignore get loss 0 (pass a value
	// no target has, such as math.MinInt, to ignore none). smoothing mixes
	// the one-hot target with the uniform distribution.
	CrossEntropy(loss, lse, logits, target Operand, rows, cols, ignore int, smoothing float64)
	// CrossEntropyGrad writes dlogits from the per-row loss gradients dloss.
	CrossEntropyGrad(dlogits, dloss, logits, lse, target Operand, rows, cols, ignore int, smoothing float64)

	// Conv2d computes y (N, K, OH, OW) from x (N, C, H, W) and w (K, C/G, R, S).
	// ws holds p.ForwardWorkspace(x's dtype) elements of the compute
	// dtype (nil Block when that is 0).
	Conv2d(p Conv2d, y, x, w, ws Operand)
	// Conv2dGradInput writes dx from dy and w; its ws holds
	// p.GradInputWorkspace(dy's dtype) elements of the compute dtype.
	Conv2dGradInput(p Conv2d, dx, dy, w, ws Operand)
	// Conv2dGradWeight writes dw (overwritten) from dy and x; its ws holds
	// p.GradWeightWorkspace(dw's dtype) elements of the compute dtype.
	Conv2dGradWeight(p Conv2d, dw, dy, x, ws Operand)
	// MaxPool2d writes the window maxima of x into y.
	MaxPool2d(p Pool2d, y, x Operand)
	// MaxPool2dGrad routes each dy to the (first) maximum of its window in x.
	MaxPool2dGrad(p Pool2d, dx, dy, x Operand)
	// AvgPool2d writes window means (p.CountPad: padding counts in the divisor).
	AvgPool2d(p Pool2d, y, x Operand)
	// AvgPool2dGrad spreads dy evenly over each window.
	AvgPool2dGrad(p Pool2d, dx, dy Operand)
	// AdaptiveAvgPool2d averages x (N, C, H, W) into y (N, C, OH, OW) with
	// PyTorch's windows: start floor(i·H/OH), end ceil((i+1)·H/OH).
	AdaptiveAvgPool2d(y, x Operand, n, c, h, w, oh, ow int)
	// AdaptiveAvgPool2dGrad is its gradient.
	AdaptiveAvgPool2dGrad(dx, dy Operand, n, c, h, w, oh, ow int)

	// IndexSelect views src as (outer, n, inner) and writes dst (outer, m,
	// inner) = src[:, idx[j], :] for the m integer indices idx.
	IndexSelect(dst, src, idx Operand, outer, n, inner int)
	// IndexAdd adds src (outer, m, inner) into dst (outer, n, inner) at rows idx.
	IndexAdd(dst, idx, src Operand, outer, n, inner int)
	// Gather views src as (outer, n, inner) and idx, dst as (outer, m, inner)
	// and writes dst[o,j,i] = src[o, idx[o,j,i], i] (torch.gather).
	Gather(dst, src, idx Operand, outer, n, m, inner int)
	// ScatterAdd adds src (outer, m, inner) into dst (outer, n, inner) at
	// dst[o, idx[o,j,i], i].
	ScatterAdd(dst, idx, src Operand, outer, n, m, inner int)

	// Dropout writes dst = src·mask/(1-p), the mask drawn from the counter-
	// based Philox4x32-10 generator keyed by seed: element i (row-major) is
	// kept when its uniform draw — word (offset+i) mod 4 of the block at
	// counter (offset+i)/4 — is ≥ p. The same call on dy computes backward.
	Dropout(dst, src Operand, p float64, seed, offset uint64)
	// Attention computes scaled-dot-product attention for q, k, v (B, H, T, D):
	// out (B, H, T, D) and the row log-sum-exp lse (B, H, T) in the compute
	// dtype (F64 for F64 inputs, F32 for F32, F16 and BF16); causal masks
	// keys after the query position.
	Attention(out, lse, q, k, v Operand, b, h, t, d int, scale float64, causal bool)
	// AttentionGrad writes dq, dk, dv from dout, recomputing the probabilities
	// from q, k and lse.
	AttentionGrad(dq, dk, dv, dout, q, k, v, out, lse Operand, b, h, t, d int, scale float64, causal bool)

	// Optimizer kernels (package optim). The operands of AdamStep and
	// SGDStep are contiguous and of one length; p is F32 or F64, and g and
	// the state operands (m, v, buf) have p's dtype. p and the state are
	// updated in place; g is only read.

	// AdamStep applies one Adam or AdamW update (see AdamArgs for the
	// formula) to p, with m and v its first and second moments.
	AdamStep(p, g, m, v Operand, a AdamArgs)
	// SGDStep applies one SGD update (see SGDArgs for the formula) to p;
	// buf is the momentum buffer, a nil-Block operand when Momentum is 0.
	SGDStep(p, g, buf Operand, a SGDArgs)
	// SumSquares writes Σ src² into dst, one F64 element, accumulating in
	// float64 in an order that does not depend on the number of cores. src
	// is any float dtype.
	SumSquares(dst, src Operand)

	// Quantization kernels (package quant). Quantization is symmetric with
	// zero point 0: a real x is stored as the int8
	// q = clamp(round(x·(1/scale)), −127, 127) (round half to even, 1/scale
	// rounded to float32; −128 is never produced) and read back as q·scale.
	// Scales are F32 operands on the device (one per row, or one for the
	// whole tensor), so that computing a scale never needs a host copy.
	// src is viewed as (rows, len/rows); all operands are contiguous.

	// QuantScales writes dst[r] = max(max_j |src[r][j]| / 127, 2^−23), the
	// symmetric scale of each of the rows of src (F32); dst holds rows F32.
	QuantScales(dst, src Operand, rows int)
	// Quantize writes dst (I8) from src (F32, same length) with scale
	// (F32: rows values, or one).
	Quantize(dst, src, scale Operand, rows int)
	// FakeQuantize writes dst = q·scale (quantize, then dequantize) for
	// src F32 or F64 (dst the same dtype, may be src), with scale as in
	// Quantize.
	FakeQuantize(dst, src, scale Operand, rows int)
	// FakeQuantizeGrad writes the straight-through gradient: dx = dy where
	// src·(1/scale) rounds into [−127, 127], else 0 (dx, dy and src one
	// float dtype; dx may be dy).
	FakeQuantizeGrad(dx, dy, src, scale Operand, rows int)
	// LinearI8 writes y (M, N) F32 = acc·(xscale·wscale[j]) + bias[j] with
	// acc = xq (M, K) · wq (N, K)ᵀ, the exact int32 product of I8 operands
	// (K ≤ 131071), computed in y's own memory; xscale is one F32, wscale N
	// F32, bias N F32 or a nil Block. The product is rounded before the
	// bias is added (no fused multiply-add).
	LinearI8(y, xq, wq, xscale, wscale, bias Operand, m, n, k int)
	// Conv2dI8 writes y (N, K, OH, OW) F32 = relu?(acc·(xscale·wscale[k]) +
	// bias[k]), acc the exact int32 convolution of xq (N, C, H, W) I8 with
	// wq (K, C/G, R, S) I8; scales and bias as in LinearI8. col (I8) and acc
	// (I32) are the workspaces sized by p.I8Workspace().
	Conv2dI8(p Conv2d, y, xq, wq, xscale, wscale, bias, col, acc Operand, relu bool)
}

// Operand is tensor memory as a kernel sees it: a block, an element offset,
// a dtype, and a shape with strides.
type Operand struct {
	Block *Block
	// Off is the offset of the first element, in elements.
	Off   int
	DType dtype.DType
	Shape []int
	// Strides gives the step between elements along each dimension, in
	// elements; stride 0 repeats (broadcasts). nil means contiguous.
	Strides []int
}

// Len returns the number of elements (the product of Shape).
func (o Operand) Len() int {
	n := 1
	for _, s := range o.Shape {
		n *= s
	}
	return n
}

// Contiguous reports whether the operand's elements are dense in row-major order.
func (o Operand) Contiguous() bool {
	if o.Strides == nil {
		return true
	}
	want := 1
	for i := len(o.Shape) - 1; i >= 0; i-- {
		if o.Shape[i] != 1 && o.Strides[i] != want {
			return false
		}
		want *= o.Shape[i]
	}
	return true
}

// Nil reports whether the operand is absent (no block).
func (o Operand) Nil() bool { return o.Block == nil }

// optimizer kernels

// AdamArgs are the hyperparameters of one AdamStep, with PyTorch's
// semantics (torch.optim.Adam and AdamW). With t = Step (1 for the first
// update), λ = WeightDecay and g the gradient, per element:
//
//	Adam  (Decoupled false): g' = g + λ·p
//	AdamW (Decoupled true):  p  = p·(1 − LR·λ); g' = g
//	m  = β1·m + (1 − β1)·g'
//	v  = β2·v + (1 − β2)·g'²
//	m̂ = m / (1 − β1^t)
//	v̂ = v / (1 − β2^t)
//	p  = p − LR·m̂ / (√v̂ + Eps)
type AdamArgs struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	// Step is the 1-based number of this update of the parameter.
	Step int
	// Decoupled selects AdamW's weight decay.
	Decoupled bool
}

// SGDArgs are the hyperparameters of one SGDStep, with PyTorch's semantics
// (torch.optim.SGD). With μ = Momentum, τ = Dampening, λ = WeightDecay and
// g the gradient, per element:
//
//	g' = g + λ·p
//	μ = 0:     d = g'                      (buf is not used)
//	μ ≠ 0:     buf = g'                    on the first step (First)
//	           buf = μ·buf + (1 − τ)·g'    after it
//	           d = g' + μ·buf              (Nesterov)
//	           d = buf                     (otherwise)
//	p = p − LR·d
type SGDArgs struct {
	LR, Momentum, Dampening, WeightDecay float64
	// Nesterov selects Nesterov momentum.
	Nesterov bool
	// First says buf holds no history yet: it is set to g', undampened.
	First bool
}

// quantization kernels

// i8ConvColumns is the number of output positions (samples × OH·OW) that
// Conv2dI8 aims to give each unit of work: one worker's im2col matrix, its
// packed panels and its accumulator then stay in a core's L2 cache for
// the small images int8 inference runs on.
const i8ConvColumns = 512

// I8Slots is the number of workers whose Conv2dI8 workspaces the device
// holds (I8Workspace); further workers use Go-heap buffers. A constant, so
// that a convolution's device bytes do not depend on the machine.
const I8Slots = 2

// I8Chunk returns how many samples a Conv2dI8 unit of work convolves:
// enough for about i8ConvColumns output positions, at least 1 and at most
// N.
func (p Conv2d) I8Chunk() int {
	ohw := max(p.OH*p.OW, 1)
	return max(1, min(p.N, (i8ConvColumns+ohw-1)/ohw))
}

// I8Workspace returns the elements of Conv2dI8's two workspaces, for
// I8Slots workers with units of c = I8Chunk() samples: col, int8 im2col
// matrices of one group, I8Slots·(C/G·R·S)·(c·OH·OW), and acc, their int32
// accumulators, I8Slots·(K/G)·(c·OH·OW).
func (p Conv2d) I8Workspace() (col, acc int) {
	c := p.I8Chunk()
	ohw := p.OH * p.OW
	return I8Slots * p.C / p.Groups * p.R * p.S * c * ohw, I8Slots * p.K / p.Groups * c * ohw
}
