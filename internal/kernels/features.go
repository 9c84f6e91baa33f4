package kernels

import (
	"os"
	"runtime"

	"golang.org/x/sys/cpu"
)

// Features says which instruction-set paths the kernels may take. It is
// read once at start-up; the noasm build tag turns every assembly path off.
type Features struct {
	AVX2FMA bool // AVX2 and FMA3: the 256-bit float paths
	F16C    bool // hardware F16<->F32 conversion
	AVX512  bool // AVX-512 F, BW, VL, DQ
	// AVX512VNNI is AVX-512 with its VNNI extension: the ZMM VPDPBUSD
	// of the INT8 GEMM's quads layout. (AVX-VNNI, the VEX form on CPUs
	// without AVX-512, is not used: Go's assembler encodes VPDPBUSD only
	// in its EVEX form.)
	AVX512VNNI bool
	// AVX512BF16 is AVX-512 with AVX512_BF16: VDPBF16PS, the bfloat16
	// GEMM's pair micro-kernel.
	AVX512BF16 bool
	// AMXBF16 is AMX-TILE and AMX-BF16 on an AVX512_BF16 CPU, with the
	// OS's leave to use the tile data state (asked for once, at start-up,
	// on Linux) and HEADROOM_NO_AMX unset: TDPBF16PS, the bfloat16
	// GEMM's 32×32 tile kernel. HEADROOM_NO_AMX=1 turns it off (the
	// pair kernel on VDPBF16PS runs instead), for comparisons.
	AMXBF16 bool
}

// CPU is what this machine offers and the build allows.
var CPU = detect()

func detect() Features {
	if noasm || runtime.GOARCH != "amd64" {
		return Features{}
	}
	x := cpu.X86
	f := Features{
		AVX2FMA: x.HasAVX2 && x.HasFMA,
		F16C:    x.HasAVX2 && x.HasFMA, // every AVX2 CPU has F16C
		AVX512:  x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512DQ,
		AVX512VNNI: x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512DQ &&
			x.HasAVX512VNNI,
		AVX512BF16: x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512DQ &&
			x.HasAVX512BF16,
	}
	f.AMXBF16 = f.AVX512BF16 && x.HasAMXTile && x.HasAMXBF16 &&
		os.Getenv("HEADROOM_NO_AMX") != "1" && amxPermit()
	return f
}

// Path names the widest path in use, for benchmarks and reports: "go"
// (no assembly), "avx2", "avx512" or "avx512+vnni" (the int8 GEMM on
// VPDPBUSD as well), with "+bf16" added when the bfloat16 GEMM runs on
// VDPBF16PS ("avx512+vnni+bf16"), and "+amx" when it runs on AMX's
// TDPBF16PS ("avx512+vnni+bf16+amx").
func (f Features) Path() string {
	if f.AVX512 && f.AVX512BF16 && f.AMXBF16 {
		g := f
		g.AMXBF16 = false
		return g.Path() + "+amx"
	}
	if f.AVX512 && f.AVX512BF16 {
		return Features{AVX512: true, AVX512VNNI: f.AVX512VNNI}.Path() + "+bf16"
	}
	switch {
	case f.AVX512 && f.AVX512VNNI:
		return "avx512+vnni"
	case f.AVX512:
		return "avx512"
	case f.AVX2FMA:
		return "avx2"
	}
	return "go"
}
