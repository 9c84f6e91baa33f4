// Package cuda binds the parts of the CUDA driver API, NVRTC, cuBLAS,
// cuBLASLt and NCCL that headroom's cuda device and package parallel use, loaded at run time with purego
// (no cgo, no CUDA headers at build time).
//
// Libraries are found by soname, newest major first (libcuda.so.1;
// libnvrtc.so.13, .12, .11.2; libcublas.so.13, .12, .11 and libcublasLt
// alike), through the dynamic loader's search and then in $CUDA_HOME/lib64,
// /usr/local/cuda/lib64 and /usr/lib/x86_64-linux-gnu. An environment
// variable naming a full path overrides the search, and then only that
// path is tried: HEADROOM_LIBCUDA, HEADROOM_LIBNVRTC, HEADROOM_LIBCUBLAS,
// HEADROOM_LIBCUBLASLT, HEADROOM_LIBNCCL (the emulator's tests point them
// at fake libraries). NCCL is libnccl.so.2 (then libnccl.so), loaded by
// LoadNCCL only when a communicator is made. Each library is loaded once per process, at first use.
//
// Every symbol is looked up before it is bound: a missing library or
// symbol is a *LoadError that errors.Is ErrNoDriver, ErrNoNVRTC,
// ErrNoCublas or ErrNoNCCL, never a panic. A failing call is an *Error with the call,
// its result code and the code's name; errors.Is matches it against the
// code sentinels (ErrOutOfMemory, …). NVRTC's failures are *CompileError
// with the program log.
//
// Cost: driver calls go through purego.SyscallN (no reflection); a kernel
// launch copies its parameters into a preallocated, runtime.Pinner-pinned
// ParamBlock (the void** array and the value cells) and makes one
// SyscallN. cublasGemmEx (19 parameters) and cublasGemmStridedBatchedEx
// (23) are bound with purego.RegisterFunc, once. A pointer argument is
// converted to uintptr in the argument list of a go:uintptrescapes
// function (sys, Driver.call, NVRTC.call or SyscallN itself), which moves
// what it points to onto the heap for the call. ncclCommInitRank takes
// its 128-byte ncclUniqueId by value: in memory, on the stack (System V
// class MEMORY), so it is called through SyscallN (at most 32 words in
// this purego) with comm, nranks and rank in the first three registers,
// three unused ones, and the id as 16 stack words (the comm out-pointer,
// which reaches SyscallN inside a slice, is a runtime.Pinner-pinned heap
// word: a stack variable would move with its goroutine's stack before the
// call, and NCCL would write into the old stack); ncclAllReduce and
// ncclReduceScatter take 7 arguments. ncclGetErrorString's string is
// copied by a RegisterFunc binding.
// cuBLASLt is loaded and only cublasLtCreate, cublasLtDestroy and
// cublasLtGetVersion are bound. The package holds no device memory of its
// own; a ParamBlock is 2.3 KiB of pinned Go memory.
package cuda
