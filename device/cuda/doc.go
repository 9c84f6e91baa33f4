// Package cuda is the device cuda:N: an NVIDIA GPU driven through the CUDA
// driver API, NVRTC and cuBLAS, all loaded at run time (package
// internal/cuda, purego: no cgo, so a binary built with CGO_ENABLED=0 runs
// on machines with or without CUDA). Open returns a *device.Device with
// the same caching allocator, tags, Summary, timeline and *OOMError as the
// cpu and meta devices.
//
// # The trade
//
// Every call for a device runs on one goroutine locked to its OS thread
// (a CUDA context is per thread), fed by a queue: kernels and GEMMs are
// queued and the op returns at once; anything that reads values on the
// host (Kernels.Read: Item, Float32s, saving) waits for the queue and the
// stream. A launch failure is sticky: it is raised, as a
// *device.KernelError (which autograd's Try and Scope.Run return as an
// error), by the next call into the device, then cleared. Kernels are CUDA
// C (kernels/*.cu), compiled by NVRTC for the device's compute capability
// (compute_XY) at the first use of a kernel of a file, and cached per
// device, per process, and on disk (HEADROOM_CUDA_CACHE).
//
// Cost: a queued launch encodes its parameters (no reflection), sends
// them to the worker and returns: about 1 µs of the caller's time here
// (BenchmarkLaunchHost, 2 cores, emulator); the worker then copies them
// into a pinned parameter block and makes one cuLaunchKernel through
// purego.SyscallN (BenchmarkLaunch measures the whole pipeline, bounded by
// the driver's launch).
//
// One stream carries kernels and copies, so a block freed on the host is
// reused only by later work of that stream: the allocator's host-side free
// is stream-ordered, with no event needed. Memory goes back to the driver
// (Decommit, Free: EmptyCache, Close) only after the stream has finished.
//
// Collectives (package parallel's NCCL communicator) use a second,
// non-blocking stream per device, made at the first Collective call: on
// the worker, an event recorded on the compute stream, the communication
// stream waits for it, the collective is queued there and an event marks
// its end; the caller's goroutine then waits for that event on the host,
// through a waiter goroutine locked to its own OS thread with the context
// current (the driver API is thread-safe), so the worker and the compute
// stream go on meanwhile. Because the caller returns only after the
// collective has finished, its tensors are free to be released and
// reused by the compute stream, with no event back. OnWorker runs a
// function with the context current (NCCL's initialisation). The stream,
// its 9 events and the waiter go at Close.
//
// # Memory
//
// Segments are expandable by default: Backend.Alloc reserves address space
// (cuMemAddressReserve, the segment rounded up to the granularity, 2 MiB
// on current GPUs), and Commit and Decommit map and unmap physical chunks
// of one granule (cuMemCreate, cuMemMap, cuMemSetAccess; cuMemUnmap,
// cuMemRelease). The backend counts the committed bytes in each granule
// and a granule is mapped exactly while some committed byte lies in it.
// Where the virtual-memory calls are missing or not supported by the
// device, or HEADROOM_CUDA_VMM=0, segments are plain cuMemAlloc
// allocations, whole. A Commit that the driver cannot back (another
// process took the memory) is an *OOMError with the driver's error as its
// Cause, after the cache has given its memory back once.
//
// The capacity is the smaller of Options.Capacity (when set) and the
// memory the driver reports free at Open; an OOM report adds the driver's
// free and total bytes. What the device takes from the GPU:
//
//	physical = Σ over granules with a committed byte of the granularity
//	         ≥ Stats.Reserved (the committed bytes), by < 1 granule per segment edge
//	Stats.Reserved includes the cuBLAS workspace: one block of 32 MiB on
//	  sm_90 and later (NVIDIA's recommendation for Hopper), 4 MiB before,
//	  tagged workspace (Op "cublas"), marked resident so Leaks never
//	  reports it, released at Close
//	host, outside the allocator: StagingBytes (2 × 4 MiB) of pinned
//	  staging buffers, and the driver's own context memory
//
// Host↔device copies go through the pinned staging buffers in 4 MiB
// chunks on the compute stream: Write returns once the source is copied
// into them (each buffer waits on the event of its previous copy), Read
// waits for each chunk. Copies between two cuda devices go through the
// host.
//
// # GEMM
//
// Kernels.Gemm calls cublasGemmEx, or cublasGemmStridedBatchedEx for a
// batch, mapping headroom's row-major GEMM to cuBLAS's column-major one
// (Cᵀ = op(B)ᵀ·op(A)ᵀ: A and B swap, M and N swap). F64 computes in F64,
// F32 in F32 with pedantic math (no TF32, so results match the cpu device
// within F32 tolerances) unless HEADROOM_CUDA_TF32=1, and F16 and BF16
// inputs accumulate in F32. cuBLASLt is loaded and only its handle is
// made (cublasLtCreate, cublasLtDestroy, cublasLtGetVersion).
// A Gemm with a Bias sets beta·C + bias into C with the copy (or scale
// and add) kernels first and runs cuBLAS with beta 1: the cpu's sum, not
// yet cuBLASLt's bias epilogue.
//
// # Int8
//
// The quantization kernels of package quant (kernels/quant.cu) give the
// cpu's results bit for bit. LinearI8 and Conv2dI8 run gemm_i8, a tiled
// int8 GEMM of this package (64 × 64 outputs a block, __dp4a, exact int32
// accumulators; not cuBLAS) whose epilogue dequantizes straight into y, a
// product and a sum each rounded (no FMA). Conv2dI8 writes the transposed
// im2col matrix of as many samples as its col workspace holds
// (p.I8Workspace(): 2·I8Chunk samples) and leaves acc unused; no memory
// beyond the operands and those workspaces.
//
// # Knobs (environment, read at the first Open)
//
//	HEADROOM_LIBCUDA, HEADROOM_LIBNVRTC, HEADROOM_LIBCUBLAS, HEADROOM_LIBCUBLASLT
//	    a library's full path; when set, only that path is tried (default:
//	    the sonames newest first, then $CUDA_HOME/lib64, /usr/local/cuda/lib64,
//	    /usr/lib/x86_64-linux-gnu)
//	HEADROOM_CUDA_VMM=0   plain cuMemAlloc segments instead of expandable ones
//	HEADROOM_CUDA_TF32=1  F32 GEMMs may use TF32 tensor cores (default off)
//	HEADROOM_CUDA_CACHE   the PTX cache folder (default headroom/ptx under
//	    os.UserCacheDir; "off" disables it)
//
// # 16-bit convolutions
//
// F16 and BF16 convolution gradients stay in F32 until their one rounding,
// as on the cpu. The weight gradient sums the samples in F32: cuBLAS's
// GEMM with 16-bit inputs and an F32 output adds each sample into an
// accumulator in the spare half of the F32 workspace autograd passes (the
// 16-bit im2col matrix takes the other half), in blocks of dw's rows when
// K/G > OH·OW/2 (each block builds its im2col matrices again), and one
// cast writes dw. The input gradient's GEMM writes an F32 im2col matrix,
// which conv_col2im_wide_T sums and rounds. These kernels need
// device.Conv2d.Workspace() elements of the compute dtype; autograd
// passes ForwardWorkspace, GradInputWorkspace or GradWeightWorkspace
// elements, at least that (the cpu kernels' need when larger, so that meta
// accounts one size for both), and the 16-bit weight gradient's
// accumulator takes any room after the im2col matrix. A pointwise
// convolution (1×1, stride 1, no padding) has no im2col matrix: its
// weight gradient's workspace is at least K/G·C/G F32 elements for 16-bit
// operands, all of it the accumulator. A 3-step BF16 ResNet matches the cpu bit for bit on the
// emulator (it differed by up to 4% of a tensor's largest momentum value
// when the samples were summed in BF16). Callers passing a 16-bit
// workspace too small for one row of F32 sums, or none, still sum the
// weight gradient's samples in the 16-bit dtype (one GEMM per sample,
// beta 1).
//
// Close gives
// everything back (segments unmapped, address ranges freed, staging freed,
// cuBLAS destroyed, modules unloaded, the primary context released, the
// worker ended) once the last live block is released; blocks still live at
// Close keep their segment, and the context, until then.
package cuda
