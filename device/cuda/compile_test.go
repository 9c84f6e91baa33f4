package cuda

import (
	"bytes"
	"os"
	"path"
	"sort"
	"testing"

	icuda "github.com/headroom-ml/headroom/internal/cuda"
)

// TestKernelsCompile compiles every kernel source of the kernels folder (Sources) with
// NVRTC for compute_80 (A100) and compute_90 (H100, H200) and checks that
// the PTX declares kernels, with the options the backend compiles with
// (internal/cuda's NVRTC.Compile). It is CI's compile check of the CUDA C:
// it needs NVRTC (HEADROOM_LIBNVRTC names its path, else the loader's
// search) and fails when HEADROOM_REQUIRE_NVRTC=1 and NVRTC is missing.
func TestKernelsCompile(t *testing.T) {
	rtc, err := icuda.LoadNVRTC()
	if err != nil {
		if os.Getenv("HEADROOM_REQUIRE_NVRTC") == "1" {
			t.Fatalf("NVRTC is required (HEADROOM_REQUIRE_NVRTC=1): %v", err)
		}
		t.Skipf("no NVRTC here: %v", err)
	}
	headers := map[string][]byte{}
	var units []string
	srcs := Sources() // the embedded kernels folder
	for name, b := range srcs {
		switch path.Ext(name) {
		case ".cuh", ".h":
			headers[name] = b
		case ".cu":
			units = append(units, name)
		}
	}
	sort.Strings(units)
	if len(units) == 0 {
		t.Fatal("no .cu sources in kernels/")
	}
	for _, u := range units {
		src := srcs[u]
		for _, arch := range []string{"compute_80", "compute_90"} {
			t.Run(u+"/"+arch, func(t *testing.T) {
				t.Parallel()
				ptx, err := rtc.Compile(u, src, headers, arch)
				if err != nil {
					t.Fatalf("%v", err)
				}
				if !bytes.Contains(ptx, []byte(".entry ")) {
					t.Errorf("%s for %s: the PTX declares no kernel", u, arch)
				}
			})
		}
	}
}
