// Package emu is a host emulator of CUDA for tests. It trades speed for the
// ability to run the CUDA backend, unchanged, on a machine without a GPU:
// Build compiles headroom's own kernel sources with g++ for the host and
// links them into a fake libcuda.so.1, beside a fake libcublas.so,
// libcublasLt.so and libnccl.so.2, which the backend then loads through the same run-time
// loading path (purego, the HEADROOM_LIB* variables) as the real libraries.
// It is a test harness, not a product feature, and it is built to fail
// loudly where a GPU would.
//
//	libs, err := emu.Build(sources) // file name → contents: every .cu and the headers they include
//	libs.Setenv(t)                  // HEADROOM_LIBCUDA, HEADROOM_LIBCUBLAS, HEADROOM_LIBCUBLASLT, HEADROOM_LIBNCCL
//
// # What it emulates
//
// Kernels. Every `extern "C" __global__ void NAME(...)` of a .cu source
// (found after preprocessing, so entries made by macros count) is compiled
// with -include shim.h, which defines the device dialect for the host
// (__global__, __device__, __shared__, threadIdx/blockIdx/blockDim/gridDim,
// __syncthreads, __syncwarp, __shfl_sync/_up/_down/_xor, __ballot_sync,
// __all_sync, __any_sync, atomics, __float_as_uint and friends, the NVRTC
// math built-ins that <math.h> lacks, and emu_dynamic_smem for dynamic shared
// memory), and registered with an invoker generated from its own parameter
// types. A launch copies the parameter values, as the driver does, and runs
// the grid's blocks one at a time, each block's threads as fibers (256 KiB
// stacks with a guard page) on one OS thread. A fiber runs until it reaches
// __syncthreads, a warp operation or its end; between two barriers the
// block's threads run one after another, in increasing order in one phase
// and decreasing in the next (alternating from block to block too), so a
// thread that reads shared memory another thread writes without a barrier
// between them reads it too early in one of the orders (TestMissingBarrierIsSeen). Warp operations complete when
// every lane of the warp has reached the same one; a barrier when every
// thread of the block has. Any other state is a launch failure, reported on
// stderr with the kernel's name, the block and the counts ("divergent
// barrier: 57 of 64 threads wait at __syncthreads while 7 returned"), and as
// CUDA_ERROR_LAUNCH_FAILED from the next synchronising call. As on a GPU the
// error is sticky: every call returns it, and queued work is dropped, until
// the last reference to the primary context is released. A shuffle from a
// lane that does not exist (a partial warp) reads all ones (NaN, -1).
// Dynamic shared memory starts as all ones (NaN) in every block. Kernels are
// compiled with g++'s bounds checker where its run-time library (libubsan) is
// installed, as on this project's machines: an index out of an array of known
// size (a __shared__ array, a local array) stops the process with the source
// line ("kernels.cu:147:9: runtime error: index 32 out of bounds for type
// 'float [32]'"). Only full
// warp masks (0xffffffff) are supported.
//
// Streams. Nothing runs when it is queued. Each stream keeps a queue that runs
// when something waits for it: cuStreamSynchronize, cuCtxSynchronize,
// cuEventSynchronize, cuEventQuery (which answers CUDA_ERROR_NOT_READY the
// first time and lets the work run), a synchronous copy, cuMemFree_v2, or
// another stream's cuStreamWaitEvent (which runs this stream up to the
// event first). The NULL stream is a stream with the legacy default stream's
// ordering against blocking streams. So a host that reads results before it
// synchronises reads stale memory: an async copy's destination is unchanged
// until a sync. That is stricter than a GPU for one case: an async copy to
// pageable (not cuMemAllocHost_v2) memory, which the real driver finishes
// before it returns, is deferred like any other. An async copy from pageable
// memory reads it at the call, as the driver stages it; from pinned memory,
// when the copy runs.
//
// Memory. Device memory is host memory at the same address. cuMemAlloc_v2 is
// an anonymous mapping, the block placed right before an inaccessible guard
// page (as close as its 256-byte alignment allows), so a kernel that writes
// past its end faults; copies check that their device range lies in memory
// that is allocated and accessible (else CUDA_ERROR_INVALID_VALUE). The
// virtual-memory calls behave as on a GPU: granularity 2 MiB (sizes and
// addresses must be multiples, else CUDA_ERROR_INVALID_VALUE);
// cuMemAddressReserve is an inaccessible mapping; cuMemCreate is a memfd of
// the size; cuMemMap maps it at the address without access; cuMemSetAccess
// opens it; cuMemUnmap makes the range inaccessible again; cuMemRelease
// closes the handle (its memory stays counted until it is unmapped). A kernel
// that touches memory that is not mapped kills the process with SIGSEGV, the
// emulator's illegal address. Physical bytes (cuMemAlloc rounded up to 512
// bytes, cuMemCreate sizes) are counted per device against the total, and
// cuMemGetInfo_v2 reports them; past the total, cuMemAlloc_v2 and cuMemCreate
// return CUDA_ERROR_OUT_OF_MEMORY.
//
// Modules. cuModuleLoadData keeps the PTX's `.entry` names (CUDA_ERROR_INVALID_IMAGE
// for text that is not PTX, CUDA_ERROR_NO_BINARY_FOR_GPU for a target above
// sm_90, CUDA_ERROR_UNSUPPORTED_PTX_VERSION above PTX ISA 8.4);
// cuModuleGetFunction finds NAME only if the PTX declares it and a host
// kernel NAME was built (else CUDA_ERROR_NOT_FOUND, with a message when only
// the host kernel is missing). cuLaunchKernel checks the limits of sm_90:
// at most 1024 threads a block, block dimensions 1024×1024×64, grid
// 2³¹−1×65535×65535, and at most 48 KiB of dynamic shared memory unless
// cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) raised
// it (to at most 227 KiB), as on a real device.
//
// The device. Compute capability 9.0, named "headroom emulator", 132
// multiprocessors, warp size 32, driver version 12040. Contexts are per OS
// thread, as on a GPU: a call from a thread with no current context returns
// CUDA_ERROR_INVALID_CONTEXT.
//
// cuBLAS. cublasGemmEx and cublasGemmStridedBatchedEx in cuBLAS's
// column-major semantics with op N and T, data types CUDA_R_32F, 64F, 16F and
// 16BF in cuBLAS's supported combinations (else CUBLAS_STATUS_NOT_SUPPORTED),
// compute types CUBLAS_COMPUTE_32F, 32F_FAST_TF32 (computed exactly) and 64F,
// host alpha and beta read at the call, products accumulated in double, and
// 16-bit results rounded once to nearest even exactly as package dtype
// narrows float64. When beta is 0, C is not read. GEMMs are queued on the
// handle's stream like kernels. cublasSetWorkspace_v2 touches the whole
// workspace, and every GEMM touches it again when it runs, so a bad pointer
// faults; Libs.GemmsWithoutWorkspace counts GEMMs that ran with none set. cuBLASLt has handles and a version only.
//
// NCCL. libnccl.so.2 (linked against the fake libcuda) for ranks of one
// process, each on its own thread: ncclGetVersion (2.20.5),
// ncclGetUniqueId, ncclCommInitRank (ranks meet by id and block until all
// have come; the id is passed by value, as in the real ABI),
// ncclCommDestroy, ncclCommAbort, ncclCommGetAsyncError,
// ncclGetErrorString, ncclAllReduce, ncclReduceScatter, ncclAllGather
// (in place too), ncclBroadcast, and ncclGroupStart/End (which defer
// nothing). Data types F16, BF16, F32, F64; reductions sum and avg. A
// collective is a gate on the given stream: it runs when every rank has
// queued its part and every rank's stream has run what was queued before
// it; then the data of all ranks moves at once, reduced in rank order in
// F32 (F64 for F64), avg dividing by the rank count, 16-bit results
// rounded once to nearest even — package parallel's in-process group's
// arithmetic, bit for bit. Ranks that call different collectives or
// counts get ncclInvalidUsage from ncclCommGetAsyncError and no data
// moves. Each communicator allocates 4 MiB of device memory with
// cuMemAlloc_v2 at init (NCCL's buffers, seen by cuMemGetInfo_v2) and
// frees it at destroy or abort, in its own context whichever thread calls.
// After ncclCommAbort every pending and later collective of the clique
// completes without moving data and the other ranks' asynchronous error is
// ncclRemoteError. Ranks of several processes are not emulated.
//
// # What it cannot show
//
// Speed (a kernel runs on one host thread; a barrier costs about 50 ns a
// thread, BenchmarkBarrier; use small shapes). Races in general: fibers switch only at barriers and
// warp operations, so the two orders above are all the interleavings it
// tries (a race that needs a thread to stop in the middle of a phase goes
// unseen), blocks never run at once, and atomics are trivially atomic. The memory model (fences, caching, visibility between
// blocks running at once). Static __shared__ memory keeps its values from
// one block to the next (it is a static variable), where a GPU gives garbage.
// Fresh device memory reads as zeros. Floating-point results of the host
// build of a kernel can differ from the device's in the last bits where the
// compilers contract or order operations differently (g++ -O1 does not
// contract across statements; expf and friends are glibc's, not CUDA's).
// Only what headroom uses is emulated; any other driver call is absent
// (a missing symbol) and any other attribute returns CUDA_ERROR_INVALID_VALUE
// with a message. Device memory is not freed when a primary context is
// released. x86-64 Linux only (the fiber switch is written in assembly).
//
// # Knobs
//
//   - HEADROOM_EMU_MEMORY: the device's total memory in bytes (default 4 GiB),
//     read by each call, or call Libs.SetMemory, which overrides it from
//     then on.
//   - HEADROOM_EMU_DEVICES: the number of devices (default 1), read by cuInit.
//     Both may be set with os.Setenv before the library loads: without
//     cgo, purego's fake cgo implements the runtime's setenv hook, so the
//     C environment changes too (cudatest.Setup relies on it; package
//     parallel's NCCL tests open cuda:1 that way).
//   - HEADROOM_EMU_CACHE: the cache folder (default headroom/emu under
//     os.UserCacheDir). It holds one folder of libraries per set of sources
//     (named by a hash of the sources, the emulator's sources and the flags)
//     and the objects they were linked from, each named by a hash of its
//     inputs; deleting it is always safe. A build holds a lock on it, so
//     test processes that start together build a set of sources once.
//
// # Cost
//
// Build compiles with g++ -O1, in parallel on every CPU: on 2 cores, this
// package's tests take 10–20 s cold (the build and NVRTC, depending on the
// machine's load) and about 3 s cached (child processes included); all of device/cuda/kernels
// (238 entries in 10 sources) in about 20 s cold, 3 s after one source
// changed, and about 2 ms when nothing changed. Each fiber's stack is
// 256 KiB of address space (1024 fibers: 256 MiB reserved once, touched
// only as deep as kernels go).
package emu
