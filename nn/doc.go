// Package nn builds models from autograd's ops: the Module and Layer
// interfaces, a seeded Builder for parameters, layers (Linear, Conv2d,
// BatchNorm2d, LayerNorm, Embedding, Dropout, CausalSelfAttention, MLP),
// blocks (GPTBlock, BasicBlock, Bottleneck) and models (GPT, ResNet and its
// presets ResNet18…152 and SmallResNet).
//
// # Building
//
// Every constructor takes a *Builder (device, parameter dtype, seeded
// source of initial values) and the layer's full dotted name, which names
// its parameters ("layer1.0.conv1.weight", "transformer.h.3.attn.c_attn.bias"
// — torchvision's and nanoGPT's names) and labels its allocations. Two
// builders with the same seed build identical parameters. On the meta
// device nothing is drawn, so GPT-2 or ResNet-152 build instantly and their
// real training step can be measured there:
//
//	b := nn.NewBuilder(dev, dtype.F32, 1)
//	m, err := nn.ResNet50(b, "", nn.ResNetConfig{})     // torchvision's resnet50
//	g, err := nn.NewGPT(b, "", nn.GPTConfig{…}, gen)     // GPT-2 style
//	defer nn.Release(m)                                  // parameters belong to the caller
//
// GPT.Loss is the training loss of a GPT: Forward then CrossEntropy, or,
// with GPT.FusedLoss (default off), the LM head and the loss fused in row
// chunks (autograd.LinearCrossEntropy), which replaces the B·T·V·s bytes
// of logits (and their gradient) by 2·256·V·s of chunk workspace and B·T
// per-row log-sum-exps.
//
// A GPT's attention is the fused autograd.ScaledDotProductAttention by
// default (no T² matrix stored, no attention dropout). With
// GPTConfig.MaterializedAttention it is computed op by op as GPT-2 and
// nanoGPT without flash attention do (MaterializedAttention: BMM, scale,
// causal fill, softmax, attention dropout, BMM), which stores the
// B·H·T²·s softmax output, the same again after the attention dropout
// and a 4·T² mask per block: what Megatron's selective recomputation
// counts as the 5as/h term and recomputes.
//
// Initial values are counter-based: the k-th random fill of a build
// (Uniform, Normal, KaimingUniform) draws from Philox4x32-10 stream k of
// the builder's seed, element i's value a pure function of (seed, k, i)
// computed in float64 (Init documents the exact mapping: 53-bit uniforms,
// Box–Muller normals). The builder keeps each fill as an Init record
// (Builder.Init), which can produce any element range of a parameter
// alone: NewDeferredBuilder builds a model's whole structure without
// parameter storage, and a data-parallel rank (parallel.DDPConfig.Builder)
// writes only its shard of it, with the values an ordinary build gives.
// Writing values costs one host buffer of InitChunk (32768) elements at a
// time, whatever the parameter's size: 128 KiB for F32 parameters, 256 KiB
// for F64, 256 KiB plus SetFloat64s's copy and conversion (320 KiB) for
// F16 and BF16. The kernel workers (internal/kernels ParallelFor) split
// each chunk; each worker adds a fixed 12 KiB on its own stack (256 Philox
// blocks and their float64 pairs). The values do not depend on the split
// nor on the instruction set: on AVX-512 the Philox rounds run 16 counters
// at a time and the Box–Muller map repeats math.Log's and math.Sincos's
// operations in eight lanes, bit for bit the scalar Go code's results.
//
// Layer constructors panic with *autograd.Error on arguments that do not
// fit; model constructors (NewGPT, NewResNet and the presets) return an
// error for a bad configuration or when the device runs out of memory. A
// constructor that fails part-way releases what it had allocated.
//
// # Forward and memory
//
// A layer's Forward takes a tensor that belongs to a step's autograd.Scope
// and never releases it; it releases every intermediate it makes as soon as
// the next op has consumed it, so what stays allocated is exactly what
// backward needs (each op holds what it saved through its own reference).
// Every layer's doc gives two formulas, which the tests check byte for byte
// on cpu and meta:
//
//   - parameter bytes (buffers such as BatchNorm's running statistics
//     counted apart);
//   - activation bytes: what its Forward leaves allocated (tag Activation)
//     when it returns during training — its output included, its input
//     not. The input, when an op saves it, is said to be saved "alive
//     already": its caller holds it. Without a recorded graph (Scope.NoGrad)
//     only the output remains.
//
// In a chain (Sequential, a model's Forward) a layer's output stays only
// when the next layer saves it: the chain leaves the sum of its layers'
// activation bytes less the outputs that the following layer does not
// save. The blocks' and models' docs give their totals.
//
// # Saving
//
// Save and Load write and read a module's parameters and buffers, by these
// names, as a safetensors file (see their docs). The file carries a CRC-32C
// of each tensor and of the metadata ("headroom.crc32c.<name>" metadata
// strings; safetensors.ChecksumPrefix gives the format), which every load
// verifies before it writes anything: a flipped byte is an error naming the
// file and the tensor. Files without checksums (Python's) load unverified.
//
// # Modes
//
// Train(false) switches Dropout to the identity and BatchNorm2d to its
// running statistics; layers start in training mode. Dropout draws masks
// from an *autograd.Generator passed in (no global randomness); restoring
// its State repeats the masks.
package nn
