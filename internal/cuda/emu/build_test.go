package emu

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestBuildFSMatchesBuild(t *testing.T) {
	start := time.Now()
	libs, err := BuildFS(os.DirFS("."), "testdata")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Build(testSources(t))
	if err != nil {
		t.Fatal(err)
	}
	if libs != want {
		t.Errorf("BuildFS(testdata) = %v, want Build's %v", libs, want)
	}
	t.Logf("BuildFS and Build took %v", time.Since(start))
	env := strings.Join(libs.Env(), " ")
	for _, k := range []string{"HEADROOM_LIBCUDA=" + libs.Cuda, "HEADROOM_LIBCUBLAS=" + libs.Cublas, "HEADROOM_LIBCUBLASLT=" + libs.CublasLt} {
		if !strings.Contains(env, k) {
			t.Errorf("Env() = %q lacks %q", env, k)
		}
	}
}

func TestBuildReportsCompileErrors(t *testing.T) {
	_, err := Build(map[string][]byte{"bad.cu": []byte(`extern "C" __global__ void bad(float* x) { x[0] = undefined_name; }`)})
	if err == nil || !strings.Contains(err.Error(), "undefined_name") || !strings.Contains(err.Error(), "bad.cu") {
		t.Fatalf("Build of a source that does not compile: err %v, want g++'s message naming bad.cu and undefined_name", err)
	}
}
