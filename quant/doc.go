// Package quant runs trained models in INT8: it trades a small, bounded
// rounding error for weights a quarter of their F32 size (plus one F32
// scale per output channel) and integer matrix products at inference.
//
// # Scheme
//
// Quantization is symmetric with zero point 0: a real x is stored as the
// int8 q = clamp(round(x/s), −127, 127) (round half to even) and read back
// as q·s.
//
//   - Weights: one scale per output channel (per row of a Linear's (out,
//     in) weight, per filter of a convolution), s = max|w_row|/127, so no
//     weight clips. They are stored as I8 tensors with F32 scales.
//   - Activations (the input of each quantized layer): one scale per
//     tensor. Dynamic (the default) computes s = max|x|/127 from every
//     call's whole batch on the device; Static fixes s at conversion from
//     the range an Observer recorded over calibration batches (or during
//     QAT): MinMax keeps the extremes, MovingAverageMinMax an exponential
//     average with constant 0.01 (PyTorch's observers).
//   - Products: the int8 GEMM accumulates exactly in int32 (no saturation,
//     K up to 131071) and the epilogue writes F32: y = acc·s_x·s_w + b, with
//     the ReLU that follows fused where the model has one. Everything
//     between quantized layers (residual additions, pooling, layer norm,
//     attention, GELU) stays F32.
//
// Symmetric activations are the simple choice: zero stays exactly 0 (the
// padding of a convolution is the integer 0, no zero-point corrections
// enter the GEMM) and negation is exact. The cost is one bit for
// non-negative inputs (after a ReLU only 0…127 are used), which the bound
// below accounts for through s_x = max|x|/127.
//
// # Error bound
//
// For one output y = Σ_k x_k·w_k + b over n terms, with the input's scale
// s_x and the weight row's s_w, every |x_k| ≤ 127·s_x (dynamic scales
// guarantee it; a static scale clips larger inputs), and x̂, ŵ the
// quantized values: x_k − x̂_k and w_k − ŵ_k are at most s_x/2 and s_w/2,
// and y − ŷ = Σ x_k·(w_k − ŵ_k) + Σ (x_k − x̂_k)·ŵ_k, so
//
//	|ŷ − y| ≤ (s_w/2)·Σ|x_k| + (s_x/2)·Σ|ŵ_k|
//	        ≤ (s_w/2)·Σ|x_k| + (s_x/2)·Σ|w_k| + n·s_x·s_w/4
//
// plus float32 rounding in the epilogue (relative 2^−23 of |acc·s_x·s_w|
// and |b|) — the int32 sum itself is exact. The tests check every output
// of random Linear and Conv2d layers (batch-norm folded, strided, grouped)
// against their F32 counterparts within this bound; the worst observed
// error is 15–60% of it.
//
// # Three ways in
//
// Post-training, dynamic (no data needed):
//
//	q, err := quant.ConvertResNet(r, quant.Config{}, nil)
//
// Post-training, static: observers record ranges over calibration batches
// (images as the model's Forward takes them):
//
//	q, err := quant.ConvertResNet(r, quant.Config{Activations: quant.Static}, batches)
//
// Quantization-aware training: the prepared model fake-quantizes weights
// (per channel) and inputs (per tensor) in forward with a straight-through
// estimator (FakeQuantize: the gradient passes where the value is inside
// the quantization range, 0 where it was clipped), so fine-tuning learns
// weights that survive rounding; then Convert:
//
//	p, err := quant.PrepareQATResNet(r, quant.Config{Activations: quant.Static})
//	opt, err := optim.NewSGD(p.Params(), …) // r's own parameters
//	… train p like any model …
//	q, err := p.Convert()
//
// A ResNet's batch-norms are folded into the convolutions before
// quantizing (w·γ/√(var+ε), β + (b − mean)·γ/√(var+ε), running
// statistics): the int8 convolution then carries the whole conv–BN–ReLU.
// In QAT the folding happens in the graph with the statistics frozen
// (PyTorch's freeze_bn), so what is trained is exactly what Convert
// quantizes: the QAT model in eval mode computes what the int8 model
// computes, to float32 rounding (tested to 1e-5 of the largest logit).
//
// The float model may hold F32, F64, F16 or BF16 parameters: the int8
// model's scales, biases and other tensors are F32, it takes inputs of any
// float dtype (cast to F32) and returns F32. A prepared model casts its
// inputs to the parameters' dtype; QAT fake-quantizes 16-bit parameters in
// F32 (the cast is in the graph, so they still get gradients).
//
// For a GPT the four Linears of every block (attn.c_attn, attn.c_proj,
// mlp.c_fc, mlp.c_proj) and an untied lm_head are quantized; the
// embeddings, layer norms and a tied head stay F32 (see GPT).
//
// Other models are converted layer by layer: FromLinear and FromConv2d
// (a known input scale, or dynamic), or PrepareLinear / PrepareConv2d then
// ConvertLayer.
//
// # Configuration
//
// Config's zero value is the default:
//
//	Activations  Dynamic   Dynamic or Static
//	Observer     default   MinMax for calibration, MovingAverageMinMax for QAT
//	Averaging    0.01      MovingAverageMinMax's constant
//
// # Memory
//
// A quantized Linear (In → Out) holds Out·In bytes of weights, 4·Out of
// scales, 4·Out of bias and, static, 4 of input scale: the weights take
// exactly 25% of their F32 bytes (measured by the allocator in the tests).
// A converted SmallResNet (1 input channel) holds 79,840 bytes against the
// F32 model's 313,704 (25.5%). Forward allocates the F32 output and
// borrows workspace tagged Workspace, freed before it returns: the int8
// input (1 byte per element) and, for a convolution, an im2col matrix and
// an int32 accumulator for about 4096 output positions at a time (see
// Conv2d). The meta device allocates exactly what cpu does.
//
// Prepare and PrepareQAT borrow the float model (nothing is copied);
// Convert allocates the int8 model (owned by the caller: nn.Release) and
// leaves the float model as it was, so releasing the float model afterwards
// leaves only the int8 parameters.
//
// # Inference only
//
// A converted model's tensors are buffers (an optimizer over them reports
// that nothing is trainable), and its Forward in a scope that records a
// graph panics with an *autograd.Error (returned by autograd.Try): "the
// quantized model is for inference (run it inside Scope.NoGrad); to train,
// train the float model (or use QAT) and convert again".
//
// The one exception is FrozenLinear (Freeze): an INT8 weight that is not
// trained but passes gradients to its input, the frozen base of QLoRA-style
// fine-tuning (package lora). It does not quantize x: it dequantises the
// weight one tile of at most FrozenTile (65536) elements at a time into F32
// workspace inside the matrix product (forward y = x·Ŵᵀ + b, backward dx =
// dy·Ŵ), so no F32 copy of the whole weight exists; its outputs equal the
// float64 dequantised matmul to 1e-5 relative (TestFrozenLinear).
//
// # Saving
//
// Save writes a converted model as safetensors — I8 weights, F32
// <layer>.weight_scale, biases and <layer>.input_scale, the F32 rest — with
// metadata naming the format and the activation mode; Load reads it into a
// converted model of the same architecture (from Convert, or NewLike when
// only the float architecture is at hand). A file that cannot be decoded,
// was not written by Save, has another activation mode, other names,
// dtypes or shapes, or a scale that is not a finite positive number,
// returns an error and changes nothing.
package quant
