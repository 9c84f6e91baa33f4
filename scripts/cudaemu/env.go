//go:build ignore

// Command env builds the host emulator of the cuda device
// (internal/cuda/emu: a fake libcuda and libcublas, compiled by g++ from
// device/cuda's kernel sources, cached) and prints the environment that
// makes device/cuda load it, one `export NAME=value` line each, for a
// shell to eval:
//
//	eval "$(go run ./scripts/cudaemu/env.go [MEMORY_BYTES])"
//
// MEMORY_BYTES is the emulated GPU's total memory (default
// cudatest.DefaultMemory, 512 MiB). scripts/gpu-check.sh uses it when
// HEADROOM_GPU_CHECK_EMU=1 to check its own stages without a GPU.
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/headroom-ml/headroom/device/cuda"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/internal/cuda/emu"
)

func main() {
	memory := int64(cudatest.DefaultMemory)
	if len(os.Args) > 1 {
		n, err := strconv.ParseInt(os.Args[1], 10, 64)
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "cudaemu/env: memory %q: want a positive number of bytes\n", os.Args[1])
			os.Exit(2)
		}
		memory = n
	}
	libs, err := emu.Build(cuda.Sources())
	if err != nil {
		fmt.Fprintln(os.Stderr, "cudaemu/env:", err)
		os.Exit(1)
	}
	for _, kv := range append(libs.Env(), fmt.Sprintf("HEADROOM_EMU_MEMORY=%d", memory), "HEADROOM_EMU_DEVICES=1") {
		fmt.Printf("export %s\n", kv)
	}
}
