//go:build ignore

// This program writes fastmath_avx512_amd64.s: the AVX-512 twins of
// fastmath.go's exp32, tanh32, sigmoid32, geluTanh32 and geluTanhDeriv32
// loops. Each function is written once below as a list of instructions
// over named slots ({x}, {e}, …, {k} for a mask register); the program
// gives every one of four vectors its own registers and emits the lists
// interleaved instruction by instruction, so that four independent chains
// are in flight. (Measured on the development Xeon, BenchmarkFastMathLoops:
// four vectors are about 6% faster than two interleaved, and two
// interleaved about 5% faster than two one after the other, as the AVX2
// macros run.) The operations and their
// order are the AVX2 macros', without FMA (but for exp's scaling by 2^n,
// see exp), so every lane gets the Go function's bits.
//
// Run: go run fastmath_avx512_gen.go (from internal/kernels).
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// lanes is the vectors in flight per iteration (16 floats each), step
// the elements per iteration.
const (
	lanes = 4
	step  = 16 * lanes
)

// adv returns the instructions that move the pointers regs one iteration
// on.
func adv(regs ...string) string {
	var b strings.Builder
	for _, r := range regs {
		fmt.Fprintf(&b, "\tADDQ $%d, %s\n", 4*step, r)
	}
	return b.String()
}

// consts are the float32 bit patterns the instructions broadcast, as in
// fastmath.go and fastmath_amd64.s.
var consts = []struct {
	name string
	bits uint32
}{
	{"HI", 0x42b20000}, {"LO", 0xc2d00000}, {"LOG2E", 0x3fb8aa3b}, {"MAGIC", 0x4b400000},
	{"C1", 0x3f318000}, {"C2", 0xb95e8083}, {"P0", 0x3efffffd}, {"P1", 0x3e2aaa39},
	{"P2", 0x3d2aacc4}, {"P3", 0x3c092899}, {"P4", 0x3ab4fecf}, {"ONE", 0x3f800000},
	{"ABS", 0x7fffffff}, {"SIGN", 0x80000000}, {"CUT", 0x3f200000},
	{"Q0", 0xbeaaaa99}, {"Q1", 0x3e088393}, {"Q2", 0xbd5c1e2d}, {"Q3", 0x3ca9134c},
	{"Q4", 0xbbbaf0e0}, {"M2", 0xc0000000}, {"A0", 0x3fcc422a}, {"A1", 0x3d922279},
	{"A1X3", 0x3e5b33b6}, {"MAX", 0x7f7fffff},
}

// exp sets {y} = exp32({x}) with {n}, {t}, {u} and {k} as scratch ({x}
// unchanged). Lanes below LO are zeroed under {k} rather than computed
// (their arithmetic would underflow into slow subnormal products); NaN
// lanes return {x}. The one step that differs from exp32's operations is
// the last: exp32 multiplies y by 2^⌊n/2⌋ and then 2^(n−⌊n/2⌋), where
// the first product is exact (y in [0.7, 1.5), n in [−150, 128]) and the
// second rounds y·2^n once; VSCALEFPS rounds y·2^n once as well, so the
// bits are the same, with one instruction in place of nine.
func exp(x, y, n, t, u string) []string {
	s := strings.NewReplacer("{x}", x, "{y}", y, "{n}", n, "{t}", t, "{u}", u)
	var out []string
	for _, l := range []string{
		"VCMPPS.BCST $5, C_LO, {x}, {k}", // not below LO (or NaN)
		"VMINPS.BCST.Z C_HI, {x}, {k}, {y}",
		"VMULPS.BCST C_LOG2E, {y}, {n}",
		"VADDPS.BCST C_MAGIC, {n}, {n}",
		"VSUBPS.BCST C_MAGIC, {n}, {n}", // n, as a float (exact)
		"VMULPS.BCST C_C1, {n}, {u}",
		"VSUBPS {u}, {y}, {y}",
		"VMULPS.BCST C_C2, {n}, {u}",
		"VSUBPS {u}, {y}, {y}",
		"VMULPS {y}, {y}, {t}",
		"VMULPS.BCST C_P4, {y}, {u}",
		"VADDPS.BCST C_P3, {u}, {u}",
		"VMULPS {y}, {u}, {u}",
		"VADDPS.BCST C_P2, {u}, {u}",
		"VMULPS {y}, {u}, {u}",
		"VADDPS.BCST C_P1, {u}, {u}",
		"VMULPS {y}, {u}, {u}",
		"VADDPS.BCST C_P0, {u}, {u}",
		"VMULPS {t}, {u}, {u}",
		"VADDPS {y}, {u}, {u}",
		"VADDPS.BCST C_ONE, {u}, {u}",
		"VSCALEFPS.Z {n}, {u}, {k}, {y}", // u·2^n rounded once; 0 below LO
		"VCMPPS $3, {x}, {x}, {k}",       // NaN
		"VMOVAPS {x}, {k}, {y}",
	} {
		out = append(out, s.Replace(l))
	}
	return out
}

// cat joins instruction lists.
func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// A kernel is one function's per-vector body: its slots (the first is the
// input, loaded before the body), the slot holding the result, and the
// instructions.
type kernel struct {
	slots  []string
	result string
	body   []string
}

// tanhK is TANH of fastmath_amd64.s: both branches, blended under {k}.
var tanhK = kernel{
	slots:  []string{"x", "a", "e", "t0", "t1", "t2"},
	result: "t0",
	body: cat([]string{
		"VPANDD.BCST C_ABS, {x}, {a}",
		"VMULPS.BCST C_M2, {a}, {a}",
	}, exp("{a}", "{e}", "{t0}", "{t1}", "{t2}"), []string{
		"VBROADCASTSS C_ONE, {t0}",
		"VSUBPS {e}, {t0}, {t0}",
		"VADDPS.BCST C_ONE, {e}, {e}",
		"VDIVPS {e}, {t0}, {t0}",
		"VPANDD.BCST C_SIGN, {x}, {t1}",
		"VPORD {t1}, {t0}, {t0}",
		"VMULPS {x}, {x}, {t1}",
		"VMULPS.BCST C_Q4, {t1}, {t2}",
		"VADDPS.BCST C_Q3, {t2}, {t2}",
		"VMULPS {t1}, {t2}, {t2}",
		"VADDPS.BCST C_Q2, {t2}, {t2}",
		"VMULPS {t1}, {t2}, {t2}",
		"VADDPS.BCST C_Q1, {t2}, {t2}",
		"VMULPS {t1}, {t2}, {t2}",
		"VADDPS.BCST C_Q0, {t2}, {t2}",
		"VMULPS {t2}, {t1}, {t2}",
		"VMULPS {x}, {t2}, {t2}",
		"VADDPS {x}, {t2}, {t2}",
		"VPANDD.BCST C_ABS, {x}, {t1}",
		"VCMPPS.BCST $1, C_CUT, {t1}, {k}",
		"VMOVAPS {t2}, {k}, {t0}",
	}),
}

// sigm returns SIGM of fastmath_amd64.s: {r} = sigmoid32({x}).
func sigm(x, r, a, e, t0, t1 string) []string {
	s := strings.NewReplacer("{x}", x, "{r}", r, "{a}", a, "{e}", e, "{t0}", t0, "{t1}", t1)
	var out []string
	for _, l := range cat([]string{
		"VPORD.BCST C_SIGN, {x}, {a}",
	}, exp("{a}", "{e}", "{t0}", "{t1}", "{r}"), []string{
		"VBROADCASTSS C_ONE, {t1}",
		"VADDPS {t1}, {e}, {t0}",
		"VPMOVD2M {x}, {k}", // x < 0 (sign bit): the numerator is e
		"VMOVAPS {e}, {k}, {t1}",
		"VDIVPS {t0}, {t1}, {r}",
	}) {
		out = append(out, s.Replace(l))
	}
	return out
}

var sigmoidK = kernel{
	slots:  []string{"x", "r", "a", "e", "t0", "t1"},
	result: "r",
	body:   sigm("{x}", "{r}", "{a}", "{e}", "{t0}", "{t1}"),
}

// geluW is GELUW: {w} = (A1·x² + A0)·x, {x2} = x².
var geluW = []string{
	"VMULPS {x}, {x}, {x2}",
	"VMULPS.BCST C_A1, {x2}, {w}",
	"VADDPS.BCST C_A0, {w}, {w}",
	"VMULPS {x}, {w}, {w}",
}

var geluK = kernel{
	slots:  []string{"x", "r", "w", "x2", "a", "e", "t0"},
	result: "r",
	body: cat(geluW, sigm("{w}", "{r}", "{a}", "{e}", "{t0}", "{x2}"), []string{
		"VMULPS {r}, {x}, {r}",
	}),
}

// geluGradK is GELUD but its last multiply: {x} = geluTanhDeriv32(x).
var geluGradK = kernel{
	slots:  []string{"x", "x2", "w", "a", "e", "t0", "t1", "t2"},
	result: "x",
	body: cat(geluW, []string{
		"VPORD.BCST C_SIGN, {w}, {a}",
	}, exp("{a}", "{e}", "{t0}", "{t1}", "{t2}"), []string{
		"VADDPS.BCST C_ONE, {e}, {t0}",
		"VBROADCASTSS C_ONE, {t1}",
		"VDIVPS {t0}, {t1}, {t1}", // r = 1/(1+e)
		"VMULPS {t1}, {e}, {t0}",  // e·r
		"VPMOVD2M {w}, {k}",       // w < 0: σ(w) = e·r, 1−σ(w) = r
		"VBLENDMPS {t0}, {t1}, {k}, {a}",
		"VBLENDMPS {t1}, {t0}, {k}, {e}",
		"VMULPS {x}, {x}, {x2}",
		"VMULPS.BCST C_A1X3, {x2}, {x2}",
		"VADDPS.BCST C_A0, {x2}, {x2}",
		"VMINPS.BCST C_MAX, {x2}, {x2}",
		"VMULPS {a}, {x}, {t2}",
		"VMULPS {e}, {t2}, {t2}",
		"VMULPS {x2}, {t2}, {t2}",
		"VADDPS {t2}, {a}, {x}", // times dy when stored
	}),
}

// expK is the exponential of expShift and expRows: {x} holds s − shift.
var expK = kernel{
	slots:  []string{"x", "y", "n", "t", "u"},
	result: "y",
	body:   exp("{x}", "{y}", "{n}", "{t}", "{u}"),
}

// reg names slot s of vector v: Z(v·len(slots) + index).
func (k kernel) reg(v int, s string) string {
	for i, name := range k.slots {
		if name == s {
			return fmt.Sprintf("Z%d", v*len(k.slots)+i)
		}
	}
	panic("no slot " + s)
}

// emit writes the body for all vectors, interleaved.
func (k kernel) emit(w *bytes.Buffer) {
	for _, l := range k.body {
		for v := range lanes {
			r := []string{"{k}", fmt.Sprintf("K%d", v+1)}
			for _, s := range k.slots {
				r = append(r, "{"+s+"}", k.reg(v, s))
			}
			fmt.Fprintf(w, "\t%s\n", strings.NewReplacer(r...).Replace(l))
		}
	}
}

// tailMask sets K5 to vector v's lanes of the last partial block: bits
// 16v… of AX, which holds 2^r − 1 for the r elements left. BX is scratch.
func tailMask(w *bytes.Buffer, v int) {
	if v == 0 {
		w.WriteString("\tKMOVW AX, K5\n")
		return
	}
	fmt.Fprintf(w, "\tMOVQ AX, BX\n\tSHRQ $%d, BX\n\tKMOVW BX, K5\n", 16*v)
}

func main() {
	var w bytes.Buffer
	w.WriteString(header)
	for i, c := range consts {
		fmt.Fprintf(&w, "#define C_%s fmz<>+%d(SB)\n", c.name, 4*i)
	}
	w.WriteString("\n")
	for i, c := range consts {
		fmt.Fprintf(&w, "DATA fmz<>+%d(SB)/4, $%#08x\n", 4*i, c.bits)
	}
	fmt.Fprintf(&w, "GLOBL fmz<>(SB), RODATA|NOPTR, $%d\n", 4*len(consts))
	unary(&w, "tanhF32AVX512", tanhK)
	unary(&w, "sigmoidF32AVX512", sigmoidK)
	unary(&w, "geluTanhF32AVX512", geluK)
	geluGrad(&w)
	expShift(&w)
	expRows(&w)
	if err := os.WriteFile("fastmath_avx512_amd64.s", w.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

const header = `// Code generated by fastmath_avx512_gen.go; DO NOT EDIT.

//go:build amd64 && !noasm

#include "textflag.h"

// The AVX-512 twins of fastmath.go's loops (see fastmath_avx512_gen.go):
// 64 elements per iteration in four interleaved vectors, then one pass
// over the last 1–63 under masks (K5; K1–K4 are the vectors' own).

`

// loop writes a function body's loop: the 64-element iteration (load,
// body, store, after, advance) while CX ≥ 64, then one pass under masks
// over the last CX elements when CX > 0. load and store write vector v's
// moves (masked by K5 when tail); adv is the pointer increments.
func loop(w *bytes.Buffer, k kernel, load, store func(v int, tail bool), after func(tail bool), adv string) {
	fmt.Fprintf(w, "\tCMPQ CX, $%d\n\tJB tail\n\nloop:\n", step)
	pass := func(tail bool) {
		for v := range lanes {
			if tail {
				tailMask(w, v)
			}
			load(v, tail)
		}
		k.emit(w)
		for v := range lanes {
			if tail {
				tailMask(w, v)
			}
			store(v, tail)
		}
		if after != nil {
			after(tail)
		}
	}
	pass(false)
	fmt.Fprintf(w, "%s\tSUBQ $%d, CX\n\tCMPQ CX, $%d\n\tJAE loop\n\ntail:\n", adv, step, step)
	fmt.Fprintf(w, "\tTESTQ CX, CX\n\tJZ done\n\tMOVQ $1, AX\n\tSHLQ CX, AX\n\tDECQ AX\n")
	pass(true)
	fmt.Fprintf(w, "\ndone:\n")
}

// z returns ".Z" for masked loads of the tail.
func z(tail bool) string {
	if tail {
		return ".Z"
	}
	return ""
}

// k5 returns the store mask operand of the tail.
func k5(tail bool) string {
	if tail {
		return "K5, "
	}
	return ""
}

// unary writes func name(d, s *float32, n int): d = k(s).
func unary(w *bytes.Buffer, name string, k kernel) {
	fmt.Fprintf(w, "\n// func %s(d, s *float32, n int)\nTEXT ·%s(SB), NOSPLIT, $0-24\n", name, name)
	fmt.Fprintf(w, "\tMOVQ d+0(FP), DI\n\tMOVQ s+8(FP), SI\n\tMOVQ n+16(FP), CX\n")
	loop(w, k, func(v int, tail bool) {
		fmt.Fprintf(w, "\tVMOVUPS%s %d(SI), %s%s\n", z(tail), 64*v, k5(tail), k.reg(v, k.slots[0]))
	}, func(v int, tail bool) {
		fmt.Fprintf(w, "\tVMOVUPS %s, %s%d(DI)\n", k.reg(v, k.result), k5(tail), 64*v)
	}, nil, adv("SI", "DI"))
	w.WriteString("\tVZEROUPPER\n\tRET\n")
}

// geluGrad writes func geluTanhGradF32AVX512(dx, dy, x *float32, n int).
func geluGrad(w *bytes.Buffer) {
	k := geluGradK
	w.WriteString("\n// func geluTanhGradF32AVX512(dx, dy, x *float32, n int)\n")
	w.WriteString("TEXT ·geluTanhGradF32AVX512(SB), NOSPLIT, $0-32\n")
	w.WriteString("\tMOVQ dx+0(FP), DI\n\tMOVQ dy+8(FP), DX\n\tMOVQ x+16(FP), SI\n\tMOVQ n+24(FP), CX\n")
	loop(w, k, func(v int, tail bool) {
		fmt.Fprintf(w, "\tVMOVUPS%s %d(SI), %s%s\n", z(tail), 64*v, k5(tail), k.reg(v, "x"))
	}, func(v int, tail bool) {
		x := k.reg(v, "x")
		fmt.Fprintf(w, "\tVMULPS%s %d(DX), %s, %s%s\n", z(tail), 64*v, x, k5(tail), x)
		fmt.Fprintf(w, "\tVMOVUPS %s, %s%d(DI)\n", x, k5(tail), 64*v)
	}, nil, adv("SI", "DX", "DI"))
	w.WriteString("\tVZEROUPPER\n\tRET\n")
}

// y names the 256-bit low half of a Z register.
func y(zreg string) string { return "Y" + zreg[1:] }

// expBody writes expShift's and expRows' loop over SI (stores to DI; the
// same register for expRows): x = s − Z30, the sums of the results in
// element order into Z31 (element i into lane i mod 8).
func expBody(w *bytes.Buffer, dst, adv string) {
	k := expK
	loop(w, k, func(v int, tail bool) {
		x := k.reg(v, "x")
		fmt.Fprintf(w, "\tVMOVUPS%s %d(SI), %s%s\n\tVSUBPS Z30, %s, %s\n", z(tail), 64*v, k5(tail), x, x, x)
	}, func(v int, tail bool) {
		fmt.Fprintf(w, "\tVMOVUPS %s, %s%d(%s)\n", k.reg(v, "y"), k5(tail), 64*v, dst)
	}, func(tail bool) {
		for v := range lanes {
			r, t := k.reg(v, "y"), k.reg(v, "t")
			lo, hi := "", ""
			if tail {
				tailMask(w, v)
				w.WriteString("\tKSHIFTRW $8, K5, K6\n")
				lo, hi = "K5, ", "K6, "
			}
			fmt.Fprintf(w, "\tVCVTPS2PD %s, %s\n\tVADDPD %s, Z31, %sZ31\n", y(r), t, t, lo)
			fmt.Fprintf(w, "\tVEXTRACTF64X4 $1, %s, %s\n\tVCVTPS2PD %s, %s\n\tVADDPD %s, Z31, %sZ31\n",
				r, y(t), y(t), t, t, hi)
		}
	}, adv)
}

// expShift writes func expShiftF32AVX512(d, s *float32, n int, shift
// float32, acc *[8]float64).
func expShift(w *bytes.Buffer) {
	w.WriteString("\n// func expShiftF32AVX512(d, s *float32, n int, shift float32, acc *[8]float64)\n")
	w.WriteString("TEXT ·expShiftF32AVX512(SB), NOSPLIT, $0-40\n")
	w.WriteString("\tMOVQ d+0(FP), DI\n\tMOVQ s+8(FP), SI\n\tMOVQ n+16(FP), CX\n")
	w.WriteString("\tVBROADCASTSS shift+24(FP), Z30\n\tMOVQ acc+32(FP), DX\n\tVMOVUPD (DX), Z31\n")
	expBody(w, "DI", adv("SI", "DI"))
	w.WriteString("\tVMOVUPD Z31, (DX)\n\tVZEROUPPER\n\tRET\n")
}

// expRows writes func expRowsF32AVX512(s *float32, ld, rows int, lens
// *int, shift *float32, sums *float64): expRowsF32's contract.
func expRows(w *bytes.Buffer) {
	w.WriteString(`
// func expRowsF32AVX512(s *float32, ld, rows int, lens *int, shift *float32, sums *float64)
TEXT ·expRowsF32AVX512(SB), NOSPLIT, $0-48
	MOVQ s+0(FP), DI
	MOVQ ld+8(FP), R8
	MOVQ rows+16(FP), R9
	MOVQ lens+24(FP), R10
	MOVQ shift+32(FP), R11
	MOVQ sums+40(FP), R12
	SHLQ $2, R8

row:
	TESTQ R9, R9
	JZ rowsdone
	MOVQ (R10), CX
	VBROADCASTSS (R11), Z30
	VPXORQ Z31, Z31, Z31
	MOVQ DI, SI
`)
	expBody(w, "SI", adv("SI"))
	w.WriteString(`	VMOVAPD Z31, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VADDSD X1, X0, X0
	VMOVSD X0, (R12)
	ADDQ R8, DI
	ADDQ $8, R10
	ADDQ $4, R11
	ADDQ $8, R12
	DECQ R9
	JMP row

rowsdone:
	VZEROUPPER
	RET
`)
}
