//go:build unix

package emu

import (
	"fmt"

	"github.com/ebitengine/purego"
)

// SetMemory sets the emulated devices' total memory to bytes (0: back to
// HEADROOM_EMU_MEMORY, or 4 GiB), from then on, in this process: what
// cuMemGetInfo_v2 and cuDeviceTotalMem_v2 report and where cuMemAlloc_v2 and
// cuMemCreate start to return CUDA_ERROR_OUT_OF_MEMORY. Memory in use stays
// in use; free memory reads 0 while more is in use than the new total. It
// loads the fake driver if the process has not yet.
func (l Libs) SetMemory(bytes int64) error {
	if bytes < 0 {
		return fmt.Errorf("emu: SetMemory(%d): want a byte count ≥ 0", bytes)
	}
	fn, err := l.symbol(l.Cuda, "emu_set_total_memory")
	if err != nil {
		return err
	}
	purego.SyscallN(fn, uintptr(bytes))
	return nil
}

// GemmsWithoutWorkspace returns how many GEMMs of the fake cuBLAS have run,
// in this process, on a handle that had no workspace set
// (cublasSetWorkspace_v2), where real cuBLAS would allocate its own memory
// unseen by the caller's accounting.
func (l Libs) GemmsWithoutWorkspace() (int64, error) {
	fn, err := l.symbol(l.Cublas, "emu_cublas_runs_without_workspace")
	if err != nil {
		return 0, err
	}
	n, _, _ := purego.SyscallN(fn)
	return int64(n), nil
}

func (l Libs) symbol(lib, name string) (uintptr, error) {
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return 0, fmt.Errorf("emu: loading %s: %w", lib, err)
	}
	fn, err := purego.Dlsym(h, name)
	if err != nil {
		return 0, fmt.Errorf("emu: %s in %s: %w", name, lib, err)
	}
	return fn, nil
}
