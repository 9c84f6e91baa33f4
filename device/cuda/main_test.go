package cuda

import (
	"fmt"
	"os"
	"testing"

	"github.com/headroom-ml/headroom/internal/cuda/emu"
)

// emuMemory is the fake GPU's memory in these tests.
const emuMemory = 512 << 20

// TestMain points the loader at the host emulator's fake libcuda and
// libcublas, built from this package's kernel sources (cached), and at the
// real NVRTC; every test here runs through them.
//
// HEADROOM_CUDA_TESTS=gpu (or HEADROOM_CUDA_REAL=1) runs them on the machine's real driver instead
// (scripts/gpu-check.sh), with the capacity tests' numbers from it.
func TestMain(m *testing.M) {
	if os.Getenv("HEADROOM_CUDA_TESTS") == "gpu" || os.Getenv("HEADROOM_CUDA_REAL") == "1" {
		os.Exit(m.Run())
	}
	libs, err := emu.Build(Sources())
	if err != nil {
		fmt.Fprintln(os.Stderr, "device/cuda tests need the host emulator:", err)
		os.Exit(1)
	}
	for _, kv := range libs.Env() {
		k, v, _ := cut(kv)
		os.Setenv(k, v)
	}
	os.Setenv("HEADROOM_EMU_MEMORY", fmt.Sprint(emuMemory))
	os.Exit(m.Run())
}

func cut(kv string) (string, string, bool) {
	for i := range len(kv) {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}
