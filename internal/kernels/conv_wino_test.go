package kernels

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// withConvAlgo sets convAlgo for the rest of the test.
func withConvAlgo(t *testing.T, algo int) {
	t.Helper()
	old := convAlgo
	convAlgo = algo
	t.Cleanup(func() { convAlgo = old })
}

// winoFlipped returns the forward convolution q whose output is p's
// input gradient and its filters wq[c][k][r][s] = w[k][c][2−r][2−s], by
// the definition (independent of winoArgs' and the kernels' indexing).
func winoFlipped(p ConvArgs, w []float64) (ConvArgs, []float64) {
	q := convShape(ConvArgs{N: p.N, C: p.K, H: p.OH, W: p.OW, K: p.C, R: 3, S: 3, PadH: 2 - p.PadH, PadW: 2 - p.PadW})
	wq := make([]float64, len(w))
	for k := range p.K {
		for c := range p.C {
			for r := range 9 {
				wq[(c*p.K+k)*9+8-r] = w[(k*p.C+c)*9+r]
			}
		}
	}
	return q, wq
}

// winoScale returns, for each output of the forward convolution q, the
// scale T its error is bounded by: Σ_c ‖w[k][c]‖₁·‖d_c‖₁, d_c the 4×4
// input window of the output's tile (zero outside the plane). Every
// product the transforms form is of one input of the window and one
// filter value, each scaled by at most one (the entries of G, B and A),
// and an output sums 16·C of them through at most 6 additions of the
// transforms and C−1 of the GEMM, so float32 rounding moves it by at
// most about (C+12)·2⁻²⁴·9·T in the worst case; random signs keep it
// near √C of that (winoTol).
func winoScale(q ConvArgs, x, w []float64) []float64 {
	s := make([]float64, q.N*q.K*q.OH*q.OW)
	for n := range q.N {
		for k := range q.K {
			for oh := range q.OH {
				for ow := range q.OW {
					h0, w0 := oh/2*2-q.PadH, ow/2*2-q.PadW
					var sum float64
					for c := range q.C {
						var wn, dn float64
						for r := range 9 {
							wn += math.Abs(w[(k*q.C+c)*9+r])
						}
						for r := range 16 {
							h, v := h0+r/4, w0+r%4
							if h >= 0 && h < q.H && v >= 0 && v < q.W {
								dn += math.Abs(x[((n*q.C+c)*q.H+h)*q.W+v])
							}
						}
						sum += wn * dn
					}
					s[((n*q.K+k)*q.OH+oh)*q.OW+ow] = sum
				}
			}
		}
	}
	return s
}

// winoTol is the error allowed relative to winoScale for depth c: the
// worst-case bound's (C+12)·9·2⁻²⁴ with √C for the GEMM's random-sign
// sum, times 4 for margin.
func winoTol(c int) float64 { return 4 * 9 * (math.Sqrt(float64(c)) + 12) * 0x1p-24 }

// winoCheck reports the first output whose error passes tol·scale, and
// the largest ratio err/scale seen.
func winoCheck(got []float32, want, scale []float64, tol float64) (bad int, worst float64) {
	bad = -1
	for i, v := range want {
		e := math.Abs(float64(got[i]) - v)
		if scale[i] > 0 {
			worst = max(worst, e/scale[i])
		}
		if !(e <= tol*scale[i]) && bad < 0 {
			bad = i
		}
	}
	return bad, worst
}

// winoShapes cover odd planes (edge tiles), padding 0, 1 and 2, one and
// several samples, channel counts that are no multiple of 16, a 4×4
// plane, a 1×1 output and units that cross samples.
var winoShapes = []ConvArgs{
	{N: 1, C: 3, H: 5, W: 7, K: 5, PadH: 1, PadW: 1},
	{N: 3, C: 17, H: 9, W: 6, K: 19, PadH: 0, PadW: 2},
	{N: 2, C: 20, H: 4, W: 4, K: 33, PadH: 2, PadW: 1},
	{N: 5, C: 40, H: 4, W: 4, K: 24, PadH: 1, PadW: 1},
	{N: 1, C: 7, H: 3, W: 3, K: 2, PadH: 0, PadW: 0},
	{N: 4, C: 9, H: 11, W: 13, K: 10, PadH: 2, PadW: 0},
	{N: 37, C: 5, H: 2, W: 3, K: 4, PadH: 1, PadW: 1},
	{N: 2, C: 6, H: 33, W: 31, K: 7, PadH: 1, PadW: 1}, // runs of eight tiles, clipped and padded
	{N: 1, C: 4, H: 6, W: 40, K: 3, PadH: 2, PadW: 2},
}

// TestConv2dWinograd compares the Winograd forward pass and input
// gradient with the float64 definition (refConv), within winoTol of
// winoScale, on outputs and workspace prefilled with NaN.
func TestConv2dWinograd(t *testing.T) {
	withConvAlgo(t, convAlgoWinograd)
	rng := rand.New(rand.NewPCG(61, 62))
	for _, p := range winoShapes {
		p.R, p.S = 3, 3
		p = convShape(p)
		x, w := randSlice(rng, p.N*p.C*p.H*p.W), randSlice(rng, p.K*p.C*9)
		dy := randSlice(rng, p.N*p.K*p.OH*p.OW)
		ry, rdx, _ := refConv(p, x, w, dy)
		y, dx := nanSlice[float32](len(ry)), nanSlice[float32](len(x))
		Conv2d(p, y, to32(x), to32(w), convWS[float32](ConvForward, p))
		Conv2dGradInput(p, dx, to32(dy), to32(w), convWS[float32](ConvGradInput, p))
		q, wq := winoFlipped(p, w)
		for _, c := range []struct {
			name        string
			got         []float32
			want, scale []float64
			depth       int
		}{
			{"Conv2d", y, ry, winoScale(p, x, w), p.C},
			{"Conv2dGradInput", dx, rdx, winoScale(q, dy, wq), p.K},
		} {
			bad, worst := winoCheck(c.got, c.want, c.scale, winoTol(c.depth))
			if bad >= 0 {
				t.Errorf("%s %+v: [%d] = %v, want %v (scale %g)", c.name, p, bad, c.got[bad], c.want[bad], c.scale[bad])
			}
			t.Logf("%s %+v: worst error %.3g·scale (tolerance %.3g)", c.name, p, worst, winoTol(c.depth))
		}
	}
}

// TestConv2dWinogradResNet compares the Winograd route with the direct
// float32 path on a ResNet-18 layer (64 channels, 16×16, two samples):
// both within winoTol of the float64 definition, so within twice that of
// each other.
func TestConv2dWinogradResNet(t *testing.T) {
	p := convShape(ConvArgs{N: 2, C: 64, H: 16, W: 16, K: 64, R: 3, S: 3, PadH: 1, PadW: 1})
	rng := rand.New(rand.NewPCG(63, 64))
	x, w := to32(randSlice(rng, p.N*p.C*p.H*p.W)), to32(randSlice(rng, p.K*p.C*9))
	dy := to32(randSlice(rng, p.N*p.K*p.OH*p.OW))
	x64, w64, dy64 := make([]float64, len(x)), make([]float64, len(w)), make([]float64, len(dy))
	for i, v := range x {
		x64[i] = float64(v)
	}
	for i, v := range w {
		w64[i] = float64(v)
	}
	for i, v := range dy {
		dy64[i] = float64(v)
	}
	var outs [2][2][]float32
	for i, algo := range []int{convAlgoDirect, convAlgoWinograd} {
		withConvAlgo(t, algo)
		outs[i][0], outs[i][1] = make([]float32, len(dy)), make([]float32, len(x))
		Conv2d(p, outs[i][0], x, w, nil)
		Conv2dGradInput(p, outs[i][1], dy, w, nil)
	}
	q, wq := winoFlipped(p, w64)
	scales := [2][]float64{winoScale(p, x64, w64), winoScale(q, dy64, wq)}
	for pass, depth := range []int{p.C, p.K} {
		want := make([]float64, len(outs[0][pass]))
		for i, v := range outs[0][pass] {
			want[i] = float64(v)
		}
		bad, worst := winoCheck(outs[1][pass], want, scales[pass], 2*winoTol(depth))
		if bad >= 0 {
			t.Errorf("pass %d: Winograd [%d] = %v, direct %v", pass, bad, outs[1][pass][bad], want[bad])
		}
		t.Logf("pass %d: worst Winograd − direct %.3g·scale", pass, worst)
	}
}

// TestConv2dWinogradDeterministic checks that the Winograd route gives
// the same bits on one worker as split across all of them (convPart 1).
func TestConv2dWinogradDeterministic(t *testing.T) {
	withConvAlgo(t, convAlgoWinograd)
	defer func(part int) { convPart = part }(convPart)
	rng := rand.New(rand.NewPCG(65, 66))
	for _, p := range winoShapes[1:4] {
		p.R, p.S = 3, 3
		p = convShape(p)
		x, w := to32(randSlice(rng, p.N*p.C*p.H*p.W)), to32(randSlice(rng, p.K*p.C*9))
		dy := to32(randSlice(rng, p.N*p.K*p.OH*p.OW))
		var outs [2][2][]float32
		for i, part := range []int{1 << 40, 1} {
			convPart = part
			outs[i][0], outs[i][1] = make([]float32, len(dy)), make([]float32, len(x))
			Conv2d(p, outs[i][0], x, w, nil)
			Conv2dGradInput(p, outs[i][1], dy, w, nil)
		}
		for pass := range 2 {
			for e, v := range outs[0][pass] {
				if math.Float32bits(v) != math.Float32bits(outs[1][pass][e]) {
					t.Fatalf("%+v pass %d: [%d] = %v on one worker, %v on all", p, pass, e, v, outs[1][pass][e])
				}
			}
		}
	}
}

// TestConvWorkspaceWinograd checks the Winograd layout's closed form on
// ResNet-18's 64-channel 32×32 layer at batch 32 (nt = 2¹⁹/(64·128) = 64
// tiles a unit, 32·16·16/64 = 128 units, as many slots as fit in the
// direct layout after V) and its flipped input gradient; that over
// ResNet-18's 3×3 stride-1 layers at several batches the route never
// takes more than the direct layout and ConvWorkspace is the direct
// layout whatever convAlgo says (memory first); and that its 4×4×512
// layer at batch 32, where not one slot fits beside V, runs direct even
// when Winograd is asked for.
func TestConvWorkspaceWinograd(t *testing.T) {
	p := convShape(ConvArgs{N: 32, C: 64, H: 32, W: 32, K: 64, R: 3, S: 3, PadH: 1, PadW: 1})
	v, slot := 16*(72*64+16), 16*(64*64+16+64*64+16)
	for _, kind := range []ConvKind{ConvForward, ConvGradInput} {
		direct := convLayoutFor(kind, p, false, 4).total()
		want := 16 + v + min(ConvSlots(), 128, (direct-16-v)/slot)*slot
		if got := winoWorkspace(kind, p); got != want {
			t.Errorf("%v: Winograd workspace %d, want %d", kind, got, want)
		}
	}
	for _, batch := range []int{1, 8, 32, 128} {
		for _, l := range []struct{ c, hw int }{{64, 32}, {128, 16}, {256, 8}, {512, 4}} {
			q := convShape(ConvArgs{N: batch, C: l.c, H: l.hw, W: l.hw, K: l.c, R: 3, S: 3, PadH: 1, PadW: 1})
			for _, kind := range []ConvKind{ConvForward, ConvGradInput} {
				direct := convLayoutFor(kind, q, false, 4).total()
				if n := winoWorkspace(kind, q); n > direct {
					t.Errorf("%v %+v: Winograd workspace %d > the direct layout's %d", kind, q, n, direct)
				}
				for _, algo := range []int{convAlgoDirect, convAlgoAuto, convAlgoWinograd} {
					withConvAlgo(t, algo)
					if got := ConvWorkspace(kind, q, ConvF32); got != direct {
						t.Errorf("%v %+v algo %d: ConvWorkspace %d, want the direct layout's %d", kind, q, algo, got, direct)
					}
				}
			}
		}
	}
	withConvAlgo(t, convAlgoWinograd)
	deep := convShape(ConvArgs{N: 32, C: 512, H: 4, W: 4, K: 512, R: 3, S: 3, PadH: 1, PadW: 1})
	if _, _, ok := useWino(ConvForward, deep); ok || winoWorkspace(ConvForward, deep) != 0 {
		t.Errorf("%+v: Winograd runs (workspace %d) where V (%d words) leaves no slot in the direct layout (%d)",
			deep, winoWorkspace(ConvForward, deep), 16*(516*512+16), convLayoutFor(ConvForward, deep, false, 4).total())
	}
	if n := winoWorkspace(ConvGradWeight, p); n != 0 {
		t.Errorf("weight gradient: Winograd workspace %d, want 0", n)
	}
	strided := p
	strided.StrideH, strided.OH = 2, 16
	if n := winoWorkspace(ConvForward, strided); n != 0 {
		t.Errorf("stride 2: Winograd workspace %d, want 0", n)
	}
}

// TestConv2dWinogradShortWorkspace checks that a workspace one word short
// panics, naming the kernel and the size wanted.
func TestConv2dWinogradShortWorkspace(t *testing.T) {
	withConvAlgo(t, convAlgoWinograd)
	p := convShape(ConvArgs{N: 2, C: 8, H: 6, W: 6, K: 8, R: 3, S: 3, PadH: 1, PadW: 1})
	need := ConvWorkspace(ConvForward, p, ConvF32)
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "kernels.Conv2d: workspace of") {
			t.Fatalf("short workspace: panic %q, want kernels.Conv2d's workspace message", msg)
		}
	}()
	Conv2d(p, make([]float32, p.N*p.K*p.OH*p.OW), make([]float32, p.N*p.C*p.H*p.W), make([]float32, p.K*p.C*9), make([]float32, need-1))
}

// TestConv2dWinogradNoHeap checks that warm Winograd calls allocate
// nothing.
func TestConv2dWinogradNoHeap(t *testing.T) {
	withConvAlgo(t, convAlgoWinograd)
	p := convShape(ConvArgs{N: 8, C: 16, H: 6, W: 6, K: 24, R: 3, S: 3, PadH: 1, PadW: 1})
	x, w, y := make([]float32, p.N*p.C*p.H*p.W), make([]float32, p.K*p.C*9), make([]float32, p.N*p.K*p.OH*p.OW)
	wf, wi := make([]float32, ConvWorkspace(ConvForward, p, ConvF32)), make([]float32, ConvWorkspace(ConvGradInput, p, ConvF32))
	for name, f := range map[string]func(){
		"Conv2d":          func() { Conv2d(p, y, x, w, wf) },
		"Conv2dGradInput": func() { Conv2dGradInput(p, x, y, w, wi) },
	} {
		f()
		if n := testing.AllocsPerRun(10, f); n != 0 {
			t.Errorf("%s: %v allocations per call, want none", name, n)
		}
	}
}

// TestConvAlgoFrom checks HEADROOM_CONV_ALGO's values and the panic on
// any other.
func TestConvAlgoFrom(t *testing.T) {
	for v, want := range map[string]int{"": convAlgoAuto, "auto": convAlgoAuto, "direct": convAlgoDirect, "winograd": convAlgoWinograd} {
		var warn strings.Builder
		if got := convAlgoFrom(v, &warn); got != want || warn.Len() != 0 {
			t.Errorf("convAlgoFrom(%q) = %d (warning %q), want %d and no warning", v, got, warn.String(), want)
		}
	}
	var warn strings.Builder
	if got := convAlgoFrom("fast", &warn); got != convAlgoAuto ||
		!strings.Contains(warn.String(), `HEADROOM_CONV_ALGO="fast": want direct, winograd or auto`) {
		t.Errorf("convAlgoFrom(\"fast\") = %d, warning %q: want auto and a warning naming the value", got, warn.String())
	}
}

// TestWinoTransforms8 checks the eight-tile transforms (the assembly
// where the CPU has it) against their Go twins, bit for bit, at every
// column offset of the panel.
func TestWinoTransforms8(t *testing.T) {
	if !winoAsm {
		t.Skip("no assembly on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(67, 68))
	const ld = 21
	src := to32(randSlice(rng, 3*ld+18))
	var in winoPanel
	for r := range in {
		for c := range in[r] {
			in[r][c] = float32(2*rng.Float64() - 1)
		}
	}
	for i := 0; i <= 24; i++ {
		var got, want winoPanel
		winoInput8AVX2(&got, i, &src[0], ld)
		winoInput8Go(&want, i, src, ld)
		if got != want {
			t.Fatalf("winoInput8 at column %d: assembly %v, Go %v", i, got, want)
		}
		out, ref := make([]float32, ld+16), make([]float32, ld+16)
		winoOutput8AVX2(&in, i, &out[0], ld)
		winoOutput8Go(&in, i, ref, ld)
		for e := range out {
			if math.Float32bits(out[e]) != math.Float32bits(ref[e]) {
				t.Fatalf("winoOutput8 at column %d: [%d] = %v by the assembly, %v by Go", i, e, out[e], ref[e])
			}
		}
	}
}

// TestConvAlgoAuto checks auto's choice for each float32 GEMM kernel it
// was measured on, over ResNet-18's stride-1 3×3 layers at batch 32
// (tiles N·⌈OH/2⌉·⌈OW/2⌉: 8192, 2048, 512, 128) and examples/resnet's at
// batch 128 (28×28×16, 14×14×32, 7×7×64: 25088, 6272, 2048 tiles): the
// AVX2 kernel from 64 channels, 128 tiles and 64 tiles a sample or 256
// channels (ResNet-18's 4×4×512 layer still runs direct, no unit slot
// fits the direct layout), the AVX-512 kernel from 64 channels, 1024
// tiles and 64 a sample, any other kernel never; and never with fewer
// unit slots than the workers it could use.
func TestConvAlgoAuto(t *testing.T) {
	defer func(saved gemmKernel[float32], algo int) { sgemm, convAlgo = saved, algo }(sgemm, convAlgo)
	convAlgo = convAlgoAuto
	var shapes []ConvArgs
	for _, h := range []int{32, 16, 8, 4} {
		shapes = append(shapes, conv3x3(32, h, 64*32/h, 64*32/h, 1))
	}
	for _, c := range smallResNetStage1(128) {
		shapes = append(shapes, c.p)
	}
	want := map[string][]bool{
		"avx2-6x16":    {true, true, true, false, false, false, false},
		"avx512-12x32": {true, true, false, false, false, false, false},
		"go-4x4":       {false, false, false, false, false, false, false},
	}
	for name, takes := range want {
		sgemm.name = name
		for i, p := range shapes {
			for _, kind := range []ConvKind{ConvForward, ConvGradInput} {
				_, l, ok := useWino(kind, p)
				short := l.slots < min(Workers(), l.units) // too few slots for every worker: direct
				if ok != (takes[i] && !short) {
					t.Errorf("kernel %s, %s over %d×%d×%d→%d at batch %d (%d tiles, %d slots): Winograd %v, want %v",
						name, kind, p.H, p.W, p.C, p.K, p.N, l.tiles, l.slots, ok, takes[i])
				}
			}
		}
	}
}
