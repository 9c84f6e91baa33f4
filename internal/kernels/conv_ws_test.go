package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// convWS returns a NaN-filled workspace of exactly ConvWorkspace(kind, p,
// ·) elements of T.
func convWS[T Float](kind ConvKind, p ConvArgs) []T {
	var z T
	op := ConvF32
	if unsafe.Sizeof(z) == 8 {
		op = ConvF64
	}
	return nanSlice[T](ConvWorkspace(kind, p, op))
}

// convMaxWS is the most float32 words any float32 or 16-bit kernel takes
// for p: one workspace for all of them.
func convMaxWS(p ConvArgs) int {
	n := 0
	for _, k := range []ConvKind{ConvForward, ConvGradInput, ConvGradWeight} {
		n = max(n, ConvWorkspace(k, p, ConvF32), ConvWorkspace(k, p, ConvHalf))
	}
	return n
}

// TestConvRowsCoverKernels checks that convRows bounds the rows every GEMM
// kernel of this build may pack a convolution's filters for.
func TestConvRowsCoverKernels(t *testing.T) {
	asm, _ := sgemmAsmKernels()
	mrs := []int{sgemm.mr, sgemmGoKernel.mr, go12x32.mr, dgemmKernel.mr}
	for _, kn := range asm {
		mrs = append(mrs, kn.mr)
	}
	for _, kn := range []*gemmKernel[float32]{sbgemm, amxgemm} {
		if kn != nil {
			mrs = append(mrs, kn.mr)
		}
	}
	for _, mr := range mrs {
		for m := range 400 {
			if got := roundUp(m, mr); got > convRows(m) {
				t.Fatalf("mr %d: %d rows pack as %d, convRows %d", mr, m, got, convRows(m))
			}
		}
	}
}

// TestConvWorkspaceClosedForm checks ConvWorkspace against the layout
// worked out by hand for ResNet-18's first and last 3×3 convolutions at
// batch 32 over 32×32 images (float32) and a small pointwise one.
func TestConvWorkspaceClosedForm(t *testing.T) {
	s1 := convShape(ConvArgs{N: 32, C: 64, H: 32, W: 32, K: 64, R: 3, S: 3, PadH: 1, PadW: 1})
	s4 := convShape(ConvArgs{N: 32, C: 512, H: 4, W: 4, K: 512, R: 3, S: 3, PadH: 1, PadW: 1})
	pw := convShape(ConvArgs{N: 2, C: 6, H: 8, W: 8, K: 10, R: 1, S: 1, Groups: 2})
	cases := []struct {
		kind ConvKind
		p    ConvArgs
		op   ConvOperands
		want int
	}{
		// crs 576; bands of 8 rows (4 a sample), 128 units, tile 576·8·32
		// and a 4096-value staging block for each of ConvSlots() (8 up to
		// 8 cores); filters rows(64) = 72 by 576.
		{ConvForward, s1, ConvF32, 16 + 72*576 + min(ConvSlots(), 128)*(576*8*32+4096)},
		// dw 64·576 ≤ convDWSmall: 8 chunks, 7 copies of dw, 8 units;
		// staging 32 rows of the band's 256 columns.
		{ConvGradWeight, s1, ConvF32, 16 + 7*64*576 + 8*(576*8*32+32*256)},
		// 16-bit: a float32 dw after the copies; tiles of 576·256 16-bit
		// values (73728 words).
		{ConvGradWeight, s1, ConvHalf, 16 + 8*64*576 + 8*73728},
		// crs 4608, one band of 4×4: 4 samples a unit (8 units), tile
		// 4608·64 + 512·64 + 4096 staging; filters rows(512) = 516 by 4608.
		{ConvForward, s4, ConvF32, 16 + 516*4608 + 8*(4608*64+512*64+4096)},
		// Pointwise over 64 outputs: no tile, the packed filters only
		// (2 groups of rows(5) = 32 by 3).
		{ConvForward, pw, ConvF32, 16 + 2*32*3},
		// dw 10·3 small: 2 chunks (the batch), one copy (rounded to 32).
		{ConvGradWeight, pw, ConvF64, 16 + 32},
	}
	for _, c := range cases {
		if got := ConvWorkspace(c.kind, c.p, c.op); got != c.want {
			t.Errorf("ConvWorkspace(%v, %+v, %d) = %d, want %d", c.kind, c.p, c.op, got, c.want)
		}
	}
}

// TestConvWorkspaceTooSmall checks that every kernel refuses a workspace
// one element shorter than ConvWorkspace instead of taking the Go heap.
func TestConvWorkspaceTooSmall(t *testing.T) {
	p := convShape(ConvArgs{N: 3, C: 4, H: 9, W: 7, K: 6, R: 3, S: 3, PadH: 1, PadW: 1})
	x, w, dy := make([]float32, p.N*p.C*p.H*p.W), make([]float32, p.K*p.C*9), make([]float32, p.N*p.K*p.OH*p.OW)
	hx, hw, hdy := Half16{Bits: make([]uint16, len(x))}, Half16{Bits: make([]uint16, len(w))}, Half16{Bits: make([]uint16, len(dy))}
	short := func(k ConvKind, op ConvOperands) []float32 { return make([]float32, ConvWorkspace(k, p, op)-1) }
	for name, f := range map[string]func(){
		"Conv2d":               func() { Conv2d(p, dy, x, w, short(ConvForward, ConvF32)) },
		"Conv2dGradInput":      func() { Conv2dGradInput(p, x, dy, w, short(ConvGradInput, ConvF32)) },
		"Conv2dGradWeight":     func() { Conv2dGradWeight(p, w, dy, x, short(ConvGradWeight, ConvF32)) },
		"Conv2dHalf":           func() { Conv2dHalf(p, ConvOut{F: dy}, hx, hw, short(ConvForward, ConvHalf)) },
		"Conv2dGradInputHalf":  func() { Conv2dGradInputHalf(p, ConvOut{F: x}, hdy, hw, short(ConvGradInput, ConvHalf)) },
		"Conv2dGradWeightHalf": func() { Conv2dGradWeightHalf(p, ConvOut{F: w}, hdy, hx, short(ConvGradWeight, ConvHalf)) },
	} {
		msg := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			f()
			return ""
		}()
		if !strings.Contains(msg, "workspace of") || !strings.Contains(msg, "ConvWorkspace") {
			t.Errorf("%s with a short workspace: panic %q, want a workspace error", name, msg)
		}
	}
}

// TestConvWorkspaceBounds runs every kernel (float32, float64, 16-bit, the
// flipped input gradient) over convPathShapes and random shapes with a
// workspace 64 elements longer than ConvWorkspace, NaN-filled, and checks
// that the kernels never write past ConvWorkspace.
func TestConvWorkspaceBounds(t *testing.T) {
	cols, on := convFlipMinCols, convFlipGradInput
	defer func() { convFlipMinCols, convFlipGradInput = cols, on }()
	settings := []convSetting{{convTile, convPart, convDWSmall}, {1, 1, convDWSmall}, {100, 1, 0}}
	forConvShapes(t, rand.New(rand.NewPCG(21, 22)), settings, 20, func(t *testing.T, p ConvArgs, x, w, dy []float64) {
		convFlipMinCols, convFlipGradInput = cols, on
		checkWSBounds(t, p, x, w, dy)
		convFlipMinCols, convFlipGradInput = 0, true
		checkWSBounds(t, p, x, w, dy)
	})
}

// checkWSBounds runs the nine kernels (three kinds in float32, 16-bit and
// float64) over p once each, checking their workspaces' tails.
func checkWSBounds(t *testing.T, p ConvArgs, x, w, dy []float64) {
	t.Helper()
	x32, w32, dy32 := to32(x), to32(w), to32(dy)
	x64, w64, dy64 := append([]float64(nil), x...), append([]float64(nil), w...), append([]float64(nil), dy...)
	hx, _ := half16(x, true)
	hw, _ := half16(w, true)
	hdy, _ := half16(dy, true)
	out := func(n int) ConvOut { return ConvOut{H: Half16{Bits: make([]uint16, n), BF16: true}} }
	run32 := map[ConvKind]func([]float32){
		ConvForward:    func(ws []float32) { Conv2d(p, make([]float32, len(dy)), x32, w32, ws) },
		ConvGradInput:  func(ws []float32) { Conv2dGradInput(p, make([]float32, len(x)), dy32, w32, ws) },
		ConvGradWeight: func(ws []float32) { Conv2dGradWeight(p, make([]float32, len(w)), dy32, x32, ws) },
	}
	runHalf := map[ConvKind]func([]float32){
		ConvForward:    func(ws []float32) { Conv2dHalf(p, out(len(dy)), hx, hw, ws) },
		ConvGradInput:  func(ws []float32) { Conv2dGradInputHalf(p, out(len(x)), hdy, hw, ws) },
		ConvGradWeight: func(ws []float32) { Conv2dGradWeightHalf(p, out(len(w)), hdy, hx, ws) },
	}
	run64 := map[ConvKind]func([]float64){
		ConvForward:    func(ws []float64) { Conv2d(p, make([]float64, len(dy)), x64, w64, ws) },
		ConvGradInput:  func(ws []float64) { Conv2dGradInput(p, make([]float64, len(x)), dy64, w64, ws) },
		ConvGradWeight: func(ws []float64) { Conv2dGradWeight(p, make([]float64, len(w)), dy64, x64, ws) },
	}
	for _, k := range []ConvKind{ConvForward, ConvGradInput, ConvGradWeight} {
		wsTail(t, k, "float32", ConvWorkspace(k, p, ConvF32), run32[k])
		wsTail(t, k, "16-bit", ConvWorkspace(k, p, ConvHalf), runHalf[k])
		wsTail(t, k, "float64", ConvWorkspace(k, p, ConvF64), run64[k])
	}
}

// wsTail runs f on a NaN-filled workspace of need+64 elements and fails
// if any of the last 64 changed.
func wsTail[T Float](t *testing.T, k ConvKind, what string, need int, f func([]T)) {
	t.Helper()
	ws := nanSlice[T](need + 64)
	f(ws)
	for i, v := range ws[need:] {
		if !math.IsNaN(float64(v)) {
			t.Fatalf("%v %s: wrote ws[%d] = %v, past ConvWorkspace %d", k, what, need+i, v, need)
		}
	}
}

// TestConv2dNoHeap checks that with a workspace the kernels take no Go
// heap for their scratch: warm calls of every kernel (float32, 16-bit, the
// flipped input gradient) allocate nothing and never touch the kernels'
// heap buffers (convBufs stays as it was, emptied).
func TestConv2dNoHeap(t *testing.T) {
	defer func(n int, on bool) { convFlipMinCols, convFlipGradInput = n, on }(convFlipMinCols, convFlipGradInput)
	convFlipMinCols, convFlipGradInput = 0, true
	p := convShape(ConvArgs{N: 8, C: 16, H: 6, W: 6, K: 24, R: 3, S: 3, PadH: 1, PadW: 1})
	rng := rand.New(rand.NewPCG(23, 24))
	x, w, dy := randSlice(rng, p.N*p.C*p.H*p.W), randSlice(rng, p.K*p.C*9), randSlice(rng, p.N*p.K*p.OH*p.OW)
	x32, w32, dy32 := to32(x), to32(w), to32(dy)
	hx, _ := half16(x, true)
	hw, _ := half16(w, true)
	hdy, _ := half16(dy, true)
	y, dx, dw := make([]float32, len(dy)), make([]float32, len(x)), make([]float32, len(w))
	h := func(n int) ConvOut { return ConvOut{H: Half16{Bits: make([]uint16, n), BF16: true}} }
	hy, hdx, hdw := h(len(dy)), h(len(x)), h(len(w))
	ws := func(k ConvKind, op ConvOperands) []float32 { return make([]float32, ConvWorkspace(k, p, op)) }
	wf, wi, ww := ws(ConvForward, ConvF32), ws(ConvGradInput, ConvF32), ws(ConvGradWeight, ConvF32)
	hf, hi, hwg := ws(ConvForward, ConvHalf), ws(ConvGradInput, ConvHalf), ws(ConvGradWeight, ConvHalf)
	calls := map[string]func(){
		"Conv2d":               func() { Conv2d(p, y, x32, w32, wf) },
		"Conv2dGradInput":      func() { Conv2dGradInput(p, dx, dy32, w32, wi) },
		"Conv2dGradWeight":     func() { Conv2dGradWeight(p, dw, dy32, x32, ww) },
		"Conv2dHalf":           func() { Conv2dHalf(p, hy, hx, hw, hf) },
		"Conv2dGradInputHalf":  func() { Conv2dGradInputHalf(p, hdx, hdy, hw, hi) },
		"Conv2dGradWeightHalf": func() { Conv2dGradWeightHalf(p, hdw, hdy, hx, hwg) },
	}
	runs := 10
	for name, f := range calls {
		f()
		convBufs.mu.Lock()
		held := convBufs.free
		convBufs.free = nil
		convBufs.mu.Unlock()
		allocs := testing.AllocsPerRun(runs, f)
		convBufs.mu.Lock()
		n := len(convBufs.free)
		convBufs.free = held
		convBufs.mu.Unlock()
		if allocs != 0 || n != 0 {
			t.Errorf("%s: %v allocations per call, %d heap buffers taken; want none", name, allocs, n)
		}
	}
}
