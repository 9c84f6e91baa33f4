package bench

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device/cpu"
)

// TestTorchISAEnv: the native ISA leaves PyTorch's environment alone;
// avx2 replaces any earlier setting of each capping variable (this
// machine's OPENBLAS_CORETYPE among them) by its AVX2 value, once, and
// keeps every other variable in order.
func TestTorchISAEnv(t *testing.T) {
	env := []string{"PATH=/usr/bin", "OPENBLAS_CORETYPE=SkylakeX", "ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16", "OPENBLAS_NUM_THREADS=2", "ATEN_CPU_CAPABILITY_X=1"}
	for _, isa := range []string{"", "native"} {
		if got := TorchISAEnv(isa, env); !slices.Equal(got, env) {
			t.Errorf("isa %q: %q, want the environment unchanged", isa, got)
		}
	}
	got := TorchISAEnv("avx2", env)
	want := map[string]string{"PATH": "/usr/bin", "OPENBLAS_NUM_THREADS": "2", "ATEN_CPU_CAPABILITY_X": "1",
		"OPENBLAS_CORETYPE": "Haswell", "ONEDNN_MAX_CPU_ISA": "AVX2", "DNNL_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}
	seen := map[string]int{}
	var kept []string
	for _, kv := range got {
		k, v, _ := strings.Cut(kv, "=")
		seen[k]++
		if want[k] != v {
			t.Errorf("avx2: %s=%s, want %q", k, v, want[k])
		}
		if k == "PATH" || k == "OPENBLAS_NUM_THREADS" || k == "ATEN_CPU_CAPABILITY_X" {
			kept = append(kept, k)
		}
	}
	for k := range want {
		if seen[k] != 1 {
			t.Errorf("avx2: %s set %d times, want once: %q", k, seen[k], got)
		}
	}
	if !slices.Equal(kept, []string{"PATH", "OPENBLAS_NUM_THREADS", "ATEN_CPU_CAPABILITY_X"}) {
		t.Errorf("avx2: other variables %q, want them in their order", kept)
	}
}

// TestWithGodebug: the setting joins GODEBUG after what it holds, or
// makes it; one already there is not added twice.
func TestWithGodebug(t *testing.T) {
	for _, c := range []struct {
		env   []string
		want  string
		added bool
	}{
		{[]string{"A=1"}, "GODEBUG=cpu.avx512f=off", true},
		{[]string{"GODEBUG=gctrace=1", "A=1"}, "GODEBUG=gctrace=1,cpu.avx512f=off", true},
		{[]string{"GODEBUG="}, "GODEBUG=cpu.avx512f=off", true},
		{[]string{"GODEBUG=x=1,cpu.avx512f=off"}, "GODEBUG=x=1,cpu.avx512f=off", false},
	} {
		got, added := WithGodebug(c.env, ISAGodebug)
		if added != c.added || !slices.Contains(got, c.want) || len(got) != len(c.env)+btoi(!slices.ContainsFunc(c.env, isGodebug)) {
			t.Errorf("WithGodebug(%q) = %q, %v; want %q among them, added %v", c.env, got, added, c.want, c.added)
		}
	}
}

func isGodebug(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestCheckISA: unknown ISAs are refused; avx2 is accepted exactly when
// the kernels run their AVX2 path.
func TestCheckISA(t *testing.T) {
	for _, isa := range []string{"", "native"} {
		if err := CheckISA(isa); err != nil {
			t.Errorf("isa %q: %v", isa, err)
		}
	}
	if err := CheckISA("avx512"); err == nil || !strings.Contains(err.Error(), "want one of native, avx2") {
		t.Errorf("isa avx512: %v", err)
	}
	err := CheckISA("avx2")
	if (err == nil) != (cpu.KernelPath() == "avx2") {
		t.Errorf("isa avx2 with kernels %s: %v", cpu.KernelPath(), err)
	}
	if err != nil && !strings.Contains(err.Error(), "GODEBUG="+ISAGodebug) {
		t.Errorf("isa avx2: %v, want the GODEBUG setting named", err)
	}
}

// TestISAGodebugKernels: under GODEBUG=cpu.avx512f=off (a child run of
// this test binary) the kernels take their AVX2 path on a CPU with
// AVX-512, which is what --isa avx2 relies on.
func TestISAGodebugKernels(t *testing.T) {
	if os.Getenv("HEADROOM_ISA_CHILD") == "1" {
		os.Stdout.WriteString("kernels=" + cpu.KernelPath() + "\n")
		return
	}
	if !strings.HasPrefix(cpu.KernelPath(), "avx512") {
		t.Skipf("kernels %s: no AVX-512 to turn off here", cpu.KernelPath())
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestISAGodebugKernels$")
	env, _ := WithGodebug(os.Environ(), ISAGodebug)
	cmd.Env = append(env, "HEADROOM_ISA_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kernels=avx2\n") {
		t.Errorf("child under GODEBUG=%s: %v\n%s", ISAGodebug, err, out)
	}
}

// TestSideBySideISA: under --isa avx2 the table names the restriction on
// both sides and both kernel paths, and warns about a PyTorch kernel path
// still wider than AVX2.
func TestSideBySideISA(t *testing.T) {
	res := &Result{Kernels: "avx2", Threads: 2, ISA: "avx2"}
	tr := torchFixture(openblasAlt, openblasLib)
	tr.OpenBLASCore, tr.ATenCapability, tr.OneDNNISA = "Haswell", "AVX2", "Intel AVX2"
	s := SideBySide(res, tr)
	for _, want := range []string{
		"headroom kernels avx2, 2 threads",
		"- PyTorch kernels: ATen AVX2, oneDNN Intel AVX2, OpenBLAS core Haswell",
		"ISA restricted to avx2 (--isa avx2): headroom under GODEBUG=cpu.avx512f=off (kernels avx2), PyTorch under ONEDNN_MAX_CPU_ISA=AVX2",
		"not a measurement of one",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("side by side lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "WARNING") {
		t.Errorf("side by side warns:\n%s", s)
	}
	tr.OneDNNISA = "Intel AVX-512 with Intel DL Boost and bfloat16 support"
	if s := SideBySide(res, tr); !strings.Contains(s, "WARNING: PyTorch's oneDNN still ran Intel AVX-512") {
		t.Errorf("oneDNN on AVX-512 under --isa avx2: no warning:\n%s", s)
	}
	if s := SideBySide(&Result{Kernels: "avx512", Threads: 2}, tr); strings.Contains(s, "ISA restricted") {
		t.Errorf("native ISA:\n%s", s)
	}
}
