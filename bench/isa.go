package bench

import (
	"fmt"
	"strings"

	"github.com/headroom-ml/headroom/device/cpu"
)

// The ISA restriction (Config.ISA, headroom bench --isa): "avx2" runs both
// sides on their AVX2 kernels on a CPU that has AVX-512, a proxy for an
// AVX2-only CPU such as Zen 3 (same clocks, caches and memory as the
// machine it runs on, so not a measurement of one). headroom's kernels
// pick their path once at start-up from the CPU's features, which
// GODEBUG=cpu.avx512f=off hides from them (ISAGodebug; headroom bench
// restarts itself with it); PyTorch's process gets TorchISAEnv's variables.

// ISAs are the values of Config.ISA: "native" (the CPU's widest kernels,
// also "") and "avx2".
func ISAs() []string { return []string{"native", "avx2"} }

// ISAGodebug is the GODEBUG setting under which headroom's kernels take
// their AVX2 path on an AVX-512 CPU.
const ISAGodebug = "cpu.avx512f=off"

// torchISAEnv are the variables that cap PyTorch's CPU kernels at AVX2:
// oneDNN's convolutions (ONEDNN_MAX_CPU_ISA, and DNNL_MAX_CPU_ISA, its
// older name), ATen's own vectorized kernels (ATEN_CPU_CAPABILITY) and
// OpenBLAS's GEMMs (OPENBLAS_CORETYPE: Haswell is its AVX2 core).
var torchISAEnv = []string{"ONEDNN_MAX_CPU_ISA=AVX2", "DNNL_MAX_CPU_ISA=AVX2", "ATEN_CPU_CAPABILITY=avx2", "OPENBLAS_CORETYPE=Haswell"}

// CheckISA refuses an ISA other than ISAs, and "avx2" unless headroom's
// kernels run their AVX2 path (cpu.KernelPath is "avx2"): on an AVX-512
// CPU that needs GODEBUG=cpu.avx512f=off from the process's start.
func CheckISA(isa string) error {
	switch isa {
	case "", "native":
		return nil
	case "avx2":
		if p := cpu.KernelPath(); p != "avx2" {
			return fmt.Errorf("bench: isa avx2: headroom's kernels run %s here (an AVX-512 CPU needs GODEBUG=%s before start-up; a CPU without AVX2 cannot)", p, ISAGodebug)
		}
		return nil
	}
	return fmt.Errorf("bench: isa %q: want one of %s", isa, strings.Join(ISAs(), ", "))
}

// TorchISAEnv returns the environment of PyTorch's process for isa, from
// environ (os.Environ's form): environ itself for the native ISA, else
// environ without any earlier setting of torchISAEnv's variables and with
// torchISAEnv's.
func TorchISAEnv(isa string, environ []string) []string {
	if isa != "avx2" {
		return environ
	}
	out := make([]string, 0, len(environ)+len(torchISAEnv))
	for _, kv := range environ {
		if !setsAny(kv, torchISAEnv) {
			out = append(out, kv)
		}
	}
	return append(out, torchISAEnv...)
}

// setsAny says whether kv ("NAME=value") sets a variable that one of vars
// sets.
func setsAny(kv string, vars []string) bool {
	name, _, _ := strings.Cut(kv, "=")
	for _, v := range vars {
		if n, _, _ := strings.Cut(v, "="); n == name {
			return true
		}
	}
	return false
}

// WithGodebug returns environ with setting added to GODEBUG (after any
// settings it has, so that it wins), and whether it was missing.
func WithGodebug(environ []string, setting string) ([]string, bool) {
	out := make([]string, 0, len(environ)+1)
	found, added := false, false
	for _, kv := range environ {
		v, ok := strings.CutPrefix(kv, "GODEBUG=")
		if !ok {
			out = append(out, kv)
			continue
		}
		found = true
		if !strings.Contains(","+v+",", ","+setting+",") {
			v, added = strings.TrimPrefix(v+","+setting, ","), true
		}
		out = append(out, "GODEBUG="+v)
	}
	if !found {
		out, added = append(out, "GODEBUG="+setting), true
	}
	return out, added
}

// isa is c.ISA when it restricts the kernels ("avx2"), else "".
func (c Config) isa() string {
	if c.ISA == "native" {
		return ""
	}
	return c.ISA
}
