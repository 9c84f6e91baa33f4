// Package emu is a host emulator of CUDA for tests: it builds a fake
// libcuda.so.1, libcublas.so and libcublasLt.so with g++ from headroom's own
// kernel sources, so that the CUDA backend runs, unchanged and through the same
// run-time loading path, on a machine without a GPU.
//
// It is a test harness, not a product feature. See Build.
package emu
