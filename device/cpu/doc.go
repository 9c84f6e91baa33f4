// Package cpu is the computing CPU device: a device.Device whose segments
// are anonymous memory mapped from the operating system and whose Kernels
// run on the host's cores.
//
// Segments live outside Go's heap, so EmptyCache returns their memory to the
// system at once and the garbage collector never scans or frees tensor
// memory. A page becomes resident when it is first touched; when the
// allocator decommits a free range near the capacity, the whole pages in it
// go back to the system at once (madvise MADV_DONTNEED; pages shared with
// a live block stay) and read zero when touched again. Memory is zeroed
// when a segment is first reserved; a block reused from the cache is not
// zeroed again. Where mmap is not available (Go heap), decommitted memory
// stays until its segment goes.
//
// Several logical devices may exist at once (cpu:0, cpu:1, …). Each has its
// own allocator and accounting and an optional capacity, so one machine can
// stand in for a 24 GiB accelerator, or for four data-parallel ranks:
//
//	gpu := cpu.New(0, device.Options{Capacity: 24 << 30})
//	ranks := []*device.Device{cpu.New(0, device.Options{}), cpu.New(1, device.Options{})}
//
// They share the machine's cores. A cpu device allocates exactly as a meta
// device does (same rounding, segments, addresses and OOM points), so a
// meta run predicts a cpu run's memory byte for byte.
//
// F16 and BF16 operands are computed in F32 and never widened a whole
// block at a time (a parameter that is a view of one flat buffer costs
// its own size, not the buffer's):
//
//   - GEMM reads A and B as 16-bit values while it packs (BF16×BF16 on
//     VDPBF16PS where the CPU has AVX512_BF16, KernelPath "+bf16"); a
//     16-bit C is widened over its footprint, as below, except that a C
//     from 16-bit A and B (one matrix) runs a band of rows at a time (the
//     whole of a C of up to 1M elements) through one 4 MiB float32
//     buffer per GEMM in flight, kept for reuse;
//   - Reduce's sums and means over outer axes (a Linear's bias gradient)
//     of an F16 or BF16 operand read its 16-bit values, 512 at a time
//     widened on the worker's stack (BF16 widened to float64 in
//     registers);
//   - the tanh GELU and its gradient on dense BF16 operands of one
//     length widen 256 elements at a time onto the worker's stack (1 KiB
//     per operand), bit for bit the tile path below;
//   - LayerNorm's gradient with dense dy, x and dx of one 16-bit dtype
//     and rows of up to 4096 elements widens a row of dy and x at a time
//     into three float32 rows of per-worker scratch (48 KiB at most, kept
//     for reuse) and narrows each row of dx; w, mean, rstd, dw and db are
//     widened whole;
//   - attention and its gradient with dense operands of one 16-bit dtype
//     and heads of t·d ≤ 32768 elements (an F32 lse) take whole heads:
//     each worker widens a head's inputs into per-worker scratch (4 heads
//     of float32 forward, 8 backward: at most 1 MiB, kept for reuse),
//     computes it as the F32 kernel does and narrows its outputs;
//   - convolution (Conv2d and its two gradients) whose two inputs are F16
//     or BF16, with an F32, F16 or BF16 output, reads them as 16-bit:
//     im2col copies the 16-bit values into the tile and GemmHalf multiplies
//     them (VDPBF16PS for BF16 where the CPU has AVX512_BF16), accumulating
//     in F32; a 16-bit output is rounded once from F32 (the weight
//     gradient sums the batch in an F32 dw first). All its scratch is in
//     the workspace (its bytes, whatever its dtype): the packed filters,
//     at most kernels.ConvSlots() per-worker tiles, an F32 copy of a 16-bit
//     dw (K·C/G·R·S·4 bytes), sized by device.Conv2d's workspace functions;
//   - ReLU and its gradient (F16, BF16), BF16 Add, Sub, Mul and Axpy on
//     contiguous operands of one 16-bit dtype and length, and BF16 batch
//     norm forward (BatchNorm, BatchNormRelu) and backward on dense x, y,
//     dy, dx read and write 16-bit values and convert in registers
//     (kernels' vec_half, norm_half): no float32 copy, only the per-channel
//     operands' (C values each) and at most 3×16 float32 of stack per
//     call for run tails; the bits are those of the tile path below (an
//     Axpy with one 16-bit operand otherwise runs by tiles too);
//   - Unary, UnaryGrad and Binary otherwise widen tile by tile, after
//     merging the dimensions every operand steps through as one: 4096 elements of each
//     operand per tile, gathered through the operand's strides into a
//     worker's scratch of 4 tiles (64 KiB, kept for reuse), so at most
//     Workers()·64 KiB per calling goroutine, whatever the operands' sizes;
//     Softmax, SoftmaxGrad and LayerNorm do the same by groups of whole
//     rows (up to 4096 elements; LayerNorm's w and b, one row each, are
//     widened once per call), when a row fits a tile; AdamStep and SGDStep
//     with the F16 or BF16 gradient of an F32 parameter widen the gradient
//     the same way, one 4096-element tile at a time into that scratch;
//   - the other kernels (those four when a row is over 4096 elements,
//     other batch norms, losses, other attention, convolution
//     with other dtypes, pooling, indexing, Where, other reductions, Dropout, Copy between dtypes)
//     widen each operand's extent, the block elements its view reaches,
//     into a Go slice for the call (4 bytes per element, 8 when the call
//     computes in F64), and convert outputs back over the same extent.
//
// That host scratch is an artefact of this CPU implementation, not tensor
// memory: the device allocator does not see it, and a meta device
// predicts none of it.
//
// HEADROOM_CONV_ALGO (direct, winograd or auto, the default, which any
// other value gets, with a warning on stderr naming it; read once at
// start-up) picks how F32 3×3 stride-1 convolutions and their input
// gradients run: direct (im2col + GEMM) or Winograd F(2×2, 3×3), 2.25×
// fewer products at a somewhat larger rounding error. Auto takes Winograd
// from 32 channels and 128 output tiles where the F32 GEMM is the AVX2
// kernel (measured faster there, on Zen 3; unmeasured on AVX-512, so
// direct). Winograd runs within the direct route's workspace (fewer
// slots, or the direct route where none fits), so the workspace and a
// step's peak are the same either way (internal/kernels/doc.go).
package cpu
