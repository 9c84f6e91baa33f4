// Package cudatest runs a package's tests on the cuda device without a GPU:
// its Main builds the host emulator (internal/cuda/emu) from device/cuda's
// own kernel sources, points the loader at the fake libraries and runs the
// tests; Open opens an emulated device that is checked at cleanup.
//
// It is for tests outside device/cuda (parallel, train, plan, the
// examples, the commands) that need a cuda device. With
// HEADROOM_CUDA_REAL=1 (scripts/gpu-check.sh) Main runs the tests on the
// machine's real driver instead, and Open opens the real cuda:N.
//
// Comparisons for tests that run the same steps on cuda and on a
// reference device: Workspace finds a cuda device's cuBLAS workspace
// block, WithWorkspace and SameStats check that cuda's device.Stats are a
// meta (or cpu) device's plus that one block, exactly, and CloseValues
// compares tensors by name within a tolerance relative to each reference
// tensor's largest element.
//
// Knobs: Main's memory (the emulated device's total bytes; 0 means 512 MiB)
// and devices (how many emulated GPUs, HEADROOM_EMU_DEVICES; 0 means 1).
// The libraries are cached under ~/.cache/headroom/emu keyed by a hash of
// the sources, so only the first package to build them pays (about a
// minute on 2 cores); memory of the fake device lives in memfds of the test
// process and goes back when the devices close.
package cudatest
