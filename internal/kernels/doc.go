// Package kernels holds the hot loops of the cpu device as functions on Go
// slices: elementwise arithmetic over strided layouts, reductions, GEMM and
// the neural-network kernels. It knows nothing of tensors or devices; the cpu
// device adapts device.Operands to these functions.
//
// Every function here has a plain Go implementation. Faster ones (assembly
// with run-time CPU-feature dispatch) replace them behind the same
// signatures, and the plain ones stay as the reference and the fallback.
//
// 16-bit GEMM. GemmHalf reads F16 and BF16 operands as 16-bit bits. With
// both operands BF16, alpha 1 and a CPU with AVX512_BF16 it runs the
// VDPBF16PS pair micro-kernel (gemm_bf16.go, 12×32 tiles, kc 384), which
// multiplies bfloat16 pairs and accumulates in float32 with the
// instruction's rounding: each k pair adds its high then its low product,
// each rounded to float32, bfloat16 denormals read as zero and denormal
// results flushed, so its results differ from the float32 path's in the
// last bits (its Go twin, dotBF16Pair and sbgemmGo, is exact to the bit).
// Where the CPU also has AMX-BF16 and Linux grants the tile state
// (features.go; HEADROOM_NO_AMX=1 turns it off), products of depth 32 or
// more run instead on the AMX micro-kernel (gemm_amx.go, gemm_amx_amd64.s:
// TDPBF16PS, 32×32 tiles from four accumulator tiles, kc 384, mc 256),
// its pair panels padded with zero pairs to 16-pair steps and A packed
// row-major within each step (64-byte row copies for A; for Aᵀ whole steps
// by an AVX-512 scatter packer, amxStepCols its twin). Its rounding is TDPBF16PS's as measured
// here: per step, the low halves' and the high halves' products summed
// in two float32 lanes, then the lanes added, then added to C, each
// operation rounded to nearest even with denormals read as zero and
// flushed (its Go twin, amxDot and amxGo, is exact to the bit). All tile
// state lives inside one assembly call. Its scratch is the driver's
// (the same slots), plus 4 KiB on the goroutine stack for a tile when
// beta is neither 0 nor 1.
// Otherwise the operands are widened exactly to float32 while they are
// packed, a whole panel per call (pack_half.go: AVX2 assembly for the
// rows of a B panel and, for bfloat16, the columns of a transposed one;
// A's rows widened into the strip a block of depths at a time and
// interleaved by the kernel's own packer). No float32 copy of an operand
// is ever made.
//
// Bias. GemmBias and GemmHalfBias add a bias vector (one value per column
// of C) in the GEMM's own store (gemm_bias.go): each tile of C is set to
// beta·C + bias just before the first K panel's kernel adds to it, so the
// result is, bit for bit, that of filling C with the bias and running with
// beta 1, without that pass over C. The bias is read in place.
//
// Convolution (conv.go, conv_job.go, conv_col.go): im2col tiles of bands
// of output rows feeding the blocked GEMM; the forward pass and the input
// gradient pack the filters they multiply once per call, for the kernel
// their GEMMs run (pack_whole.go; the mr-row panels split across the
// workers once the filters hold packPart = 2¹⁵ elements per worker), and
// every GEMM of the call reads the packed blocks in place instead of
// packing them again per sample and band; over small planes each GEMM
// takes several samples side by side (plan's spu). Conv2dHalf and its gradients (conv_half.go) take 16-bit inputs:
// im2col over the 16-bit values, GemmHalf (so VDPBF16PS or AMX for bfloat16),
// float32 accumulation, one rounding of a 16-bit output; the weight
// gradient stays float32 over the whole batch until that rounding.
//
// Memory. GEMM scratch is host memory outside the device allocator, kept
// between calls for reuse like a stack: each worker that has run a GEMM
// holds an mc×kc packed A block, a kc×nc packed B block (batch mode; nc
// cut so that kc·nc ≤ 384·2048), an mr×nr tile and a widening strip of
// max(kc, mc, nr) float32 values, sized for the largest kernel it has run
// — 4·(240·512 + 512·1536 + 12·32 + 512) bytes ≈ 3.5 MiB for the float32
// AVX-512 kernel (depth slices of 512), 4·(240·384 + 384·2048 + 12·32 +
// 384) ≈ 3.4 MiB for the bfloat16 pair kernel, whose pair panels use half
// of the float32 slots they sit in, 4·(256·384 + 384·2048 + 32·32 + 384)
// ≈ 3.5 MiB for the AMX kernel — and each GEMM in flight holds
// a shared B block of at most gemmBBudget values (8 MiB of float32) and,
// when several column chunks or blocks of C read its op(A), that op(A)
// packed once, at most gemmABudget values (4 MiB of float32). The cpu device's
// tile scratch (device/cpu) is a FreeList of fixed-size tiles per worker.
// A convolution call holds its scratch in the caller's workspace, sized
// by ConvWorkspace (conv_ws.go): its packed filters, K·C/G·R·S elements
// with each group's (or block's) rows rounded up to whole panels of any
// kernel (convRows); one tile for each of at most ConvSlots() workers (its
// im2col rows by fewer than max(convMinCols + OW, 2·convMinCols,
// convTile/rows) columns, plus K/G rows by as many when a unit takes
// several samples); the weight gradient's chunk copies of a small dw and,
// with a 16-bit dw, one float32 copy of dw; and the flipped filters of a
// bfloat16 input gradient on the flipped route. The direct bfloat16 3×3
// route (conv_dx_route.go) runs inside that same workspace, or not at all
// (convDirectBF16Words: packed filters, then per worker slot a unit's
// channel-pair interleaved samples, a 12×32 tile, its load masks and, for
// a 16-bit y, its float32 output), and so does the direct bfloat16
// weight gradient (conv_dw.go, convDirectWGradWords: 9·Kp·Cp float32
// sums, then per sample pair of a chunk its padded, position-major x and
// dy, as many pairs as fit). Only a nil workspace
// (callers outside a device) takes a reused Go-heap buffer instead. The 16-bit row kernels keep per-worker float32
// scratch in free lists, allocated once and reused: LayerNormGradHalf
// three rows (at most 3·LayerNormHalfCols·4 = 48 KiB), AttentionHalf four
// heads and AttentionGradHalf eight (at most 8·AttnHalfHeadElems·4 =
// 1 MiB) — in bfloat16 on a CPU with AVX512_BF16 (attn_bf16.go: q, k, v
// read as bfloat16 by the pair kernel, P and dS rounded to bfloat16) none
// forward and three backward (at most 384 KiB), plus bfloat16 copies of
// the score tiles (32 KiB); ReduceColumnsHalf widens 512 values at a time on the
// stack.
// Over planes of at most 64 pixels a 16-bit forward or
// weight-gradient call builds its im2col rows by word permutation
// (conv_perm.go), and a float32 call its im2col rows, or a float32 or
// 16-bit input gradient its dx planes, by float permutation
// (conv_unperm.go), from tables of 1,256 and 2,480 bytes
// held in the call's reused job (one job per call in flight; no other
// memory).
//
// Winograd (conv_wino.go). A float32 Conv2d or Conv2dGradInput with 3×3
// filters, stride 1, dilation 1, one group and padding at most 2 may run
// as Winograd F(2×2, 3×3): 16 products per 2×2 output tile and channel
// pair instead of 36, on the same GEMM kernel (16 GEMMs of K × tiles ×
// C), the input gradient as the forward convolution of dy by the
// rotated, transposed filters (padding 2−p). Its error is larger than
// direct summation's (the transforms add and halve; bounded by a small
// multiple of 2⁻²⁴·Σ_c ‖w_kc‖₁·‖d_c‖₁ over the output's 4×4 input
// window, TestConv2dWinograd); float64 and 16-bit calls never take it.
// HEADROOM_CONV_ALGO, read once at start-up, picks the route: direct
// (never Winograd), winograd (every eligible call) or auto (the default;
// any other value is named in a warning on stderr and taken as auto):
// Winograd where it measured faster (BenchmarkConvWinograd; bounds in
// conv_wino.go's winoAuto) — at least 64 input and output channels and,
// on the AVX2 6×16 float32 kernel (Zen 3), 128 tiles (N·⌈OH/2⌉·⌈OW/2⌉)
// and 64 tiles a sample or 256 channels; on the AVX-512 12×32 kernel
// (Zen 5), twice as fast, whose products the transforms (AVX2 in
// conv_wino_amd64.s, eight tiles a call) save less of, 1024 tiles and 64
// a sample (ResNet-18's planes of 16×16 and more at batch 32); any other
// kernel (the Go one of -tags noasm) runs direct. examples/resnet's
// layers (16–64 channels over 28×28 to 7×7 planes) run direct on both.
// Intel's AVX-512 is assumed to behave as Zen 5's (unmeasured). Its workspace, in float32 words, is
// 16 + 16·(roundUp(rows(K)·C, 16) + 16) for the transformed filters plus
// s slots of 16·(roundUp(roundUp(nt, 32)·C, 16) + roundUp(K·nt, 16) +
// 32) for a unit's transformed inputs and products, with nt = min(512,
// max(64, ⌊2¹⁹/(64·(C+K))⌋ rounded down to 32), tiles rounded up to 32)
// tiles a unit, units = ⌈tiles/nt⌉ (C and K the channels of the forward
// convolution that runs: dy's and dx's for the input gradient) and s =
// min(ConvSlots(), units, the slots that fit in the direct route's layout
// after the filters). Memory first: the route never takes more than the
// direct layout, so ConvWorkspace is the direct route's whatever the CPU
// and HEADROOM_CONV_ALGO and choosing Winograd never raises a step's
// peak; a shape where not one slot fits (ResNet-18's 4×4×512 layer at
// batch 32: its 16 transformed filter matrices are 16/9 of the packed
// ones) runs direct, and auto takes Winograd only where there is a slot
// for every worker it could use.
package kernels
