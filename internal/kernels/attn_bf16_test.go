package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// attnBF16Shapes are the (b, h, t, d) of the bfloat16 attention tests:
// every t and d up to 9 (odd and even, tails of every pair and tile),
// t across one and several 64-row blocks, t past one 256-key block of the
// forward, and one call with enough work (B·H·T²·D ≥ attnSerial) to run on
// the workers.
func attnBF16Shapes() [][4]int {
	var shapes [][4]int
	for t := 1; t <= 9; t++ {
		for d := 1; d <= 9; d++ {
			shapes = append(shapes, [4]int{1 + t%2, 1 + d%2, t, d})
		}
	}
	return append(shapes, [4]int{1, 2, 17, 16}, [4]int{2, 1, 65, 17}, [4]int{1, 1, 130, 8}, [4]int{1, 1, 300, 16}, [4]int{2, 2, 256, 8})
}

// attnBF16Run is one call's operands and the results of AttentionHalf's
// and AttentionGradHalf's bfloat16 algorithm on a kernel.
type attnBF16Run struct {
	b, h, t, d      int
	causal          bool
	scale           float64
	q, k, v, dout   []uint16
	out, dq, dk, dv []uint16
	lse             []float32
}

// newAttnBF16Run draws random bfloat16 operands for one shape.
func newAttnBF16Run(r *rand.Rand, sh [4]int, causal bool) *attnBF16Run {
	c := &attnBF16Run{b: sh[0], h: sh[1], t: sh[2], d: sh[3], causal: causal, scale: 1 / math.Sqrt(float64(sh[3]))}
	n := c.b * c.h * c.t * c.d
	draw := func() []uint16 {
		x := make([]uint16, n)
		for i := range x {
			x[i] = dtype.BF16FromF32(float32(r.NormFloat64()))
		}
		return x
	}
	c.q, c.k, c.v, c.dout = draw(), draw(), draw(), draw()
	return c
}

// run computes out, lse, dq, dk and dv on kn, the products of depth
// amxMinK or more on deep unless it is nil.
func (c *attnBF16Run) run(kn, deep *gemmKernel[float32]) {
	n := len(c.q)
	a := attnBF16{kn: kn, deep: deep, scale: float32(c.scale)}
	c.out, c.lse = make([]uint16, n), make([]float32, c.b*c.h*c.t)
	a.forward(c.out, c.lse, c.q, c.k, c.v, c.b, c.h, c.t, c.d, c.causal)
	c.dq, c.dk, c.dv = make([]uint16, n), make([]uint16, n), make([]uint16, n)
	a.grad(c.dq, c.dk, c.dv, c.dout, c.q, c.k, c.v, c.out, c.lse, c.b, c.h, c.t, c.d, c.causal)
}

func (c *attnBF16Run) String() string {
	return fmt.Sprintf("(b,h,t,d)=(%d,%d,%d,%d) causal=%v", c.b, c.h, c.t, c.d, c.causal)
}

// pairTwinKernel is the Go twin of the pair kernel: sbgemm's blocking
// where the CPU has one, else the same blocking.
func pairTwinKernel() *gemmKernel[float32] {
	if sbgemm != nil {
		return goPairKernel(sbgemm)
	}
	return goPairKernel(&gemmKernel[float32]{mr: 12, nr: 32, mc: 240, kc: 384, nc: 2048, pairs: true})
}

// TestAttentionBF16PairsTwin runs the bfloat16 attention, forward and
// backward, causal or not, on every shape of attnBF16Shapes through the
// VDPBF16PS pair kernel and through its Go twin (dotBF16Pair's
// arithmetic), and requires every output bit for bit equal. It needs a CPU
// with AVX512_BF16.
func TestAttentionBF16PairsTwin(t *testing.T) {
	kn := pairKernelOrSkip(t)
	attnBF16TwinCheck(t, attnBF16Shapes(), [2]*gemmKernel[float32]{kn, nil}, [2]*gemmKernel[float32]{goPairKernel(kn), nil})
}

// attnBF16DeepShapes are attnBF16Shapes' larger ones and heads of d = 31
// to 64 (products of depth d on the pair kernel below 32, on the deep
// kernel from 32), with t across the AMX tile (32) and a 64-row block.
func attnBF16DeepShapes() [][4]int {
	return [][4]int{{1, 2, 17, 16}, {2, 1, 65, 17}, {1, 1, 300, 16}, {1, 1, 40, 31}, {2, 1, 33, 32}, {1, 2, 70, 33}, {1, 1, 97, 64}}
}

// TestAttentionBF16AMXTwin runs the bfloat16 attention, forward and
// backward, causal or not, over attnBF16DeepShapes with its deep products
// on the AMX kernel (the rest on the pair kernel) and on the two kernels'
// Go twins (amxDot's and dotBF16Pair's arithmetic), and requires every
// output bit for bit equal. It needs a CPU with AMX-BF16.
func TestAttentionBF16AMXTwin(t *testing.T) {
	am := amxOrSkip(t)
	kn := pairKernelOrSkip(t)
	attnBF16TwinCheck(t, attnBF16DeepShapes(), [2]*gemmKernel[float32]{kn, am}, [2]*gemmKernel[float32]{goPairKernel(kn), goAMXKernel()})
}

// attnBF16TwinCheck runs the attention on the kernels asm (pair, deep)
// and on twin over shapes, causal or not, and fails at the first bit of
// out, dq, dk, dv or lse that differs.
func attnBF16TwinCheck(t *testing.T, shapes [][4]int, asmKn, twin [2]*gemmKernel[float32]) {
	t.Helper()
	r := rand.New(rand.NewPCG(21, 22))
	for _, sh := range shapes {
		for _, causal := range []bool{false, true} {
			c := newAttnBF16Run(r, sh, causal)
			c.run(asmKn[0], asmKn[1])
			asm := *c
			c.run(twin[0], twin[1])
			for _, o := range []struct {
				name      string
				got, want []uint16
			}{{"out", asm.out, c.out}, {"dq", asm.dq, c.dq}, {"dk", asm.dk, c.dk}, {"dv", asm.dv, c.dv}} {
				for i := range o.want {
					if o.got[i] != o.want[i] {
						t.Fatalf("%v: %s[%d] = %#04x, Go twin %#04x", c, o.name, i, o.got[i], o.want[i])
					}
				}
			}
			for i := range c.lse {
				if math.Float32bits(asm.lse[i]) != math.Float32bits(c.lse[i]) {
					t.Fatalf("%v: lse[%d] = %v, Go twin %v", c, i, asm.lse[i], c.lse[i])
				}
			}
		}
	}
}

// attnBF16Tol is the reference tests' bound on max|got − ref| / max|ref|
// for each output: P and dS rounded to bfloat16 (2⁻⁹ relative each), the
// outputs rounded to bfloat16 (2⁻⁹), the forward's output rounded before
// the backward reads it, and float32 sums, with room for the sums of up
// to 300 terms whose errors do not all cancel.
const attnBF16Tol = 1.0 / 64

// attnBF16Floor is the absolute error allowed besides attnBF16Tol: the
// pair kernel flushes denormal products and sums to zero, so an output
// whose exact value is below float32's normal range may read 0.
const attnBF16Floor = 0x1p-120

// TestAttentionBF16PairsReference runs the bfloat16 attention on the pair
// kernel's Go twin (on every machine) over attnBF16Shapes, causal or not,
// and compares out, lse, dq, dk and dv with the float64 scalar attention
// (attention_ref_test.go) on the widened operands (the backward's from
// the bfloat16 out and float32 lse the forward left), within attnBF16Tol of
// each output's largest magnitude (lse: absolutely, 2⁻⁷). Where the CPU
// has AVX512_BF16 it also checks AttentionHalf and AttentionGradHalf take
// that path: their bits are those of the pair kernel's.
func TestAttentionBF16PairsReference(t *testing.T) {
	attnBF16RefSweep(t, attnBF16Shapes(), nil, rand.New(rand.NewPCG(23, 24)))
}

// attnBF16RefSweep runs the attention on the pair kernel's Go twin, its
// deep products on deep unless it is nil, over shapes, causal or not,
// checks each run against the float64 reference (attnBF16RefCheck) and,
// where the CPU has the pair kernel, AttentionHalf's and
// AttentionGradHalf's bits (attnBF16Dispatch).
func attnBF16RefSweep(t *testing.T, shapes [][4]int, deep *gemmKernel[float32], r *rand.Rand) {
	t.Helper()
	twin := pairTwinKernel()
	worst := map[string]float64{}
	for _, sh := range shapes {
		for _, causal := range []bool{false, true} {
			c := newAttnBF16Run(r, sh, causal)
			c.run(twin, deep)
			attnBF16RefCheck(t, c, worst)
			if sbgemm != nil {
				attnBF16Dispatch(t, c)
			}
		}
	}
	t.Logf("largest error / largest magnitude: %v", worst)
}

// attnBF16RefCheck compares c's results with the float64 reference.
func attnBF16RefCheck(t *testing.T, c *attnBF16Run, worst map[string]float64) {
	t.Helper()
	wide := func(x []uint16) []float64 {
		v := make([]float64, len(x))
		for i, b := range x {
			v[i] = float64(dtype.BF16ToF32(b))
		}
		return v
	}
	q, k, v, dout := wide(c.q), wide(c.k), wide(c.v), wide(c.dout)
	n, rows := len(q), c.b*c.h*c.t
	out, lse := make([]float64, n), make([]float64, rows)
	attnScalarForward(out, lse, q, k, v, c.b, c.h, c.t, c.d, c.scale, c.causal)
	// The gradient from the output and lse the forward left, as the
	// backward reads them.
	hlse := make([]float64, rows)
	for i, x := range c.lse {
		hlse[i] = float64(x)
	}
	dq, dk, dv := make([]float64, n), make([]float64, n), make([]float64, n)
	attnScalarBackward(dq, dk, dv, dout, q, k, v, wide(c.out), hlse, c.b, c.h, c.t, c.d, c.scale, c.causal)
	for _, o := range []struct {
		name      string
		got, want []float64
	}{{"out", wide(c.out), out}, {"dq", wide(c.dq), dq}, {"dk", wide(c.dk), dk}, {"dv", wide(c.dv), dv}} {
		var big, bad float64
		for i, w := range o.want {
			big = max(big, math.Abs(w))
			if e := math.Abs(o.got[i] - w); !(e <= bad) {
				bad = e
			}
		}
		if big > 0 {
			worst[o.name] = max(worst[o.name], bad/big)
		}
		if !(bad <= attnBF16Tol*big+attnBF16Floor) {
			t.Fatalf("%v: %s: max error %g over max magnitude %g, want ≤ %g of it", c, o.name, bad, big, attnBF16Tol)
		}
	}
	for i, w := range lse {
		if e := math.Abs(float64(c.lse[i]) - w); !(e <= 1.0/128) {
			t.Fatalf("%v: lse[%d] = %v, float64 reference %v", c, i, c.lse[i], w)
		}
	}
}

// attnBF16Dispatch checks that AttentionHalf and AttentionGradHalf on
// bfloat16 give the bits of the attention on the pair kernel, its deep
// products on the AMX kernel where the CPU has one.
func attnBF16Dispatch(t *testing.T, c *attnBF16Run) {
	t.Helper()
	pairs := *c
	pairs.run(sbgemm, amxgemm)
	n := len(c.q)
	out, lse := make([]uint16, n), make([]float32, len(c.lse))
	AttentionHalf(out, lse, c.q, c.k, c.v, true, c.b, c.h, c.t, c.d, c.scale, c.causal)
	dq, dk, dv := make([]uint16, n), make([]uint16, n), make([]uint16, n)
	AttentionGradHalf(dq, dk, dv, c.dout, c.q, c.k, c.v, out, lse, true, c.b, c.h, c.t, c.d, c.scale, c.causal)
	for i := range n {
		if out[i] != pairs.out[i] || dq[i] != pairs.dq[i] || dk[i] != pairs.dk[i] || dv[i] != pairs.dv[i] {
			t.Fatalf("%v: element %d of AttentionHalf/AttentionGradHalf differs from the attention on the kernels they dispatch to", c, i)
		}
	}
}

// TestAttentionBF16PairsLargeScores: scores far beyond exp's range (q·k
// up to 1000) give finite results on the pair path (the online maximum
// keeps every exponent ≤ 0), within bfloat16 rounding of the float64
// attention.
func TestAttentionBF16PairsLargeScores(t *testing.T) {
	const tt, d = 3, 2
	bits := func(v ...float32) []uint16 {
		h := make([]uint16, len(v))
		for i, x := range v {
			h[i] = dtype.BF16FromF32(x)
		}
		return h
	}
	c := &attnBF16Run{b: 1, h: 1, t: tt, d: d, scale: 1,
		q: bits(100, 0, 0, 100, -100, 50), k: bits(10, 0, 0, 10, 9, 9), v: bits(1, 2, 3, 4, 5, 6), dout: bits(1, -1, 2, 0, 0.5, 3)}
	c.run(pairTwinKernel(), nil)
	attnBF16RefCheck(t, c, map[string]float64{})
}

// TestAttentionBF16AMXReference is TestAttentionBF16PairsReference with
// the deep products on the AMX kernel's Go twin (on every machine), over
// attnBF16DeepShapes: the same float64 reference and bounds; where the
// CPU has the pair kernel it also checks AttentionHalf and
// AttentionGradHalf give the bits of the kernels they dispatch to.
func TestAttentionBF16AMXReference(t *testing.T) {
	attnBF16RefSweep(t, attnBF16DeepShapes(), goAMXKernel(), rand.New(rand.NewPCG(25, 26)))
}
