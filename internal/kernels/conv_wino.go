package kernels

import (
	"fmt"
	"io"
	"math"
	"os"
	"sync/atomic"
)

// Winograd F(2×2, 3×3) for float32 convolutions with 3×3 filters, stride
// 1, dilation 1, one group and padding at most 2: the forward pass, and
// the input gradient as the forward convolution of dy by the filters
// rotated 180° and transposed K↔C, padding 2−p (as conv_flip.go's
// bfloat16 route, but the transform reads w itself: no flipped copy).
// Each 2×2 block of outputs (a tile) of one filter takes 16 products per
// input channel instead of 36:
//
//	Y = Aᵀ·[(G·g·Gᵀ) ⊙ (Bᵀ·d·B)]·A
//
// g a 3×3 filter, d the tile's 4×4 input window (zero outside the
// plane). A call transforms every filter once, V_ξ (K × C) for each of
// the 16 positions ξ, straight into the packed A layout of the float32
// GEMM kernel (packWholeA's). Its units are blocks of nt tiles, taken
// in order across the samples so that small planes still fill the
// kernel's columns: a unit transforms its tiles' inputs straight into
// the packed B panels U_ξ (C × nt, gemmPackedB's), runs the 16 GEMMs
// M_ξ (K × nt) = V_ξ·U_ξ and transforms M back into y, clipping the
// edge tiles. The GEMMs are the existing kernel's; the transforms are in
// Go (conv_wino_xform.go), eight tiles of a tile row at a time in AVX2
// assembly where the CPU has it (conv_wino_amd64.s, bit for bit the Go
// twins'). Units depend on the shape alone and each output is one
// unit's, so results do not depend on the workers.
//
// Workspace (float32 words, from the first 64-byte boundary of ws):
// convAlign + 16·(roundUp(convRows(K)·C, 16) + 16) for V, then s slots
// of 16·(roundUp(roundUp(nt, 32)·C, 16) + roundUp(K·nt, 16) + 32),
// units = ⌈N·⌈OH/2⌉·⌈OW/2⌉ / nt⌉, nt = winoTiles(C, K, tiles) and
// s = min(ConvSlots(), units, the slots that fit in the direct route's
// layout after V) (winoLayoutFor). C and K are those of the forward
// convolution that runs: for the input gradient C is dy's K channels and
// K is dx's C. The route never takes more than the direct layout, which
// is what ConvWorkspace returns: it runs only where at least one slot
// fits, and auto only where there are slots for every worker it could
// use, so Winograd never raises a step's peak.

// The convolution algorithms HEADROOM_CONV_ALGO selects for float32
// convolutions the Winograd route can run.
const (
	convAlgoAuto     = iota // Winograd where measured faster (useWino)
	convAlgoDirect          // never Winograd
	convAlgoWinograd        // Winograd for every eligible shape
)

// convAlgo is the algorithm choice, read once from HEADROOM_CONV_ALGO
// (a variable so that the tests and benchmarks can switch it).
var convAlgo = convAlgoFrom(os.Getenv("HEADROOM_CONV_ALGO"), os.Stderr)

// convAlgoFrom parses HEADROOM_CONV_ALGO's value. Any other value is
// named in one line on warn, before any work, and the choice is auto:
// the knob changes speed and rounding, never what is computed, so a
// misspelt value is not worth stopping a program (or a panic trace at
// start-up) for.
func convAlgoFrom(v string, warn io.Writer) int {
	switch v {
	case "", "auto":
		return convAlgoAuto
	case "direct":
		return convAlgoDirect
	case "winograd":
		return convAlgoWinograd
	}
	fmt.Fprintf(warn, "headroom: HEADROOM_CONV_ALGO=%q: want direct, winograd or auto; using auto\n", v)
	return convAlgoAuto
}

// Auto picks Winograd where it measured faster (BenchmarkConvWinograd)
// on the float32 GEMM kernel that runs, by winoAuto's bounds on the
// forward convolution that runs (C and K its channels, tiles
// N·⌈OH/2⌉·⌈OW/2⌉): over fewer tiles, transforming the K·C filters takes
// a growing share of what the fewer products save, and over few channels
// the transforms outweigh products of depth C. On the AVX2 6×16 kernel
// (Zen 3): 64 channels and 128 tiles, and 64 tiles a sample or 256
// channels (ResNet-18 at batch 32: 32×32×64 1.27–1.40×, 16×16×128
// 1.54–1.66×, 8×8×256 1.07–1.41×, 4×4×512 1.10–1.17×). On the AVX-512
// 12×32 kernel (Zen 5), twice as fast: 64 channels, 1024 tiles and 64
// tiles a sample (planes of 16×16 and more 1.22–1.65×; 8×8 0.93–1.06×,
// 4×4 0.98–1.02×). examples/resnet's 14×14×32 and 7×7×64 layers at batch
// 128 ran at 0.40–0.75× the direct route on both kernels, and its step
// 1.10–1.30× slower, under the first bounds (32 channels, 128 or 1024
// tiles). Any other kernel runs direct (see internal/kernels/doc.go).
type winoBounds struct{ channels, tiles, perSample, wide int }

// winoAuto returns auto's bounds on the float32 GEMM kernel named kernel,
// and false where auto never takes Winograd.
func winoAuto(kernel string) (winoBounds, bool) {
	switch kernel {
	case "avx2-6x16":
		return winoBounds{channels: 64, tiles: 128, perSample: 64, wide: 256}, true
	case "avx512-12x32":
		return winoBounds{channels: 64, tiles: 1024, perSample: 64, wide: math.MaxInt}, true
	}
	return winoBounds{}, false
}

// takes says whether the bounds take the forward convolution q of l.tiles
// tiles.
func (b winoBounds) takes(q ConvArgs, l winoLayout) bool {
	few := min(q.C, q.K)
	return few >= b.channels && l.tiles >= b.tiles && (l.tiles >= b.perSample*q.N || few >= b.wide)
}

// winoEligible says whether the Winograd route can compute p (as a
// forward convolution).
func winoEligible(p ConvArgs) bool {
	return p.R == 3 && p.S == 3 && p.StrideH == 1 && p.StrideW == 1 && p.DilH == 1 && p.DilW == 1 &&
		p.Groups == 1 && p.PadH >= 0 && p.PadH <= 2 && p.PadW >= 0 && p.PadW <= 2 &&
		p.N > 0 && p.C > 0 && p.K > 0 && p.OH == p.H+2*p.PadH-2 && p.OW == p.W+2*p.PadW-2 &&
		p.OH > 0 && p.OW > 0
}

// winoArgs returns the forward convolution the Winograd route runs for
// kind over p (the input gradient's: dy by the flipped filters, padding
// 2−p, yielding dx), its layout, and whether the route can run it; never
// for the weight gradient.
func winoArgs(kind ConvKind, p ConvArgs) (ConvArgs, winoLayout, bool) {
	if !winoEligible(p) || kind == ConvGradWeight {
		return p, winoLayout{}, false
	}
	q := p
	if kind == ConvGradInput {
		q = ConvArgs{
			N: p.N, C: p.K, H: p.OH, W: p.OW, K: p.C, R: 3, S: 3, StrideH: 1, StrideW: 1,
			PadH: 2 - p.PadH, PadW: 2 - p.PadW, DilH: 1, DilW: 1, Groups: 1, OH: p.H, OW: p.W,
		}
	}
	l := winoLayoutFor(kind, p, q)
	return q, l, l.slots > 0
}

// useWino says whether a float32 call of kind over p takes the Winograd
// route, and returns the convolution it runs and its layout.
func useWino(kind ConvKind, p ConvArgs) (ConvArgs, winoLayout, bool) {
	q, l, ok := winoArgs(kind, p)
	switch {
	case !ok || convAlgo == convAlgoDirect:
		return q, l, false
	case convAlgo == convAlgoWinograd:
		return q, l, true
	}
	b, ok := winoAuto(sgemm.name)
	return q, l, ok && b.takes(q, l) && l.slots >= min(Workers(), l.units)
}

// winoBudget is the bytes a unit's U and M aim at (half a Zen 3 core's
// L2), and winoMinTiles and winoMaxTiles bound its tiles (multiples of
// convPanelNR): a variable so that the benchmarks can tune it.
var winoBudget = 1 << 19

const (
	winoMinTiles = 64
	winoMaxTiles = 512
)

// winoTiles returns the tiles of a unit for c input and k output
// channels over tiles tiles in all: U and M within winoBudget where the
// bounds allow, and no more than the call has (rounded up to whole
// panels).
func winoTiles(c, k, tiles int) int {
	nt := winoBudget / (16 * 4 * (c + k))
	nt = min(winoMaxTiles, max(winoMinTiles, nt/convPanelNR*convPanelNR))
	return min(nt, roundUp(tiles, convPanelNR))
}

// winoLayout is a Winograd call's shape and regions of ws, in float32
// words: the transformed filters, and slots slots of slot words.
type winoLayout struct {
	th, tw, tiles, nt, units int // tile rows and columns per plane, tiles in all, per unit, units
	filters, slot, slots     int
}

// winoLayoutFor returns the layout of the Winograd route for a call of
// kind over p that runs q (the forward convolution, winoEligible).
// Memory first: the route never takes more of ws than the direct route's
// layout (convLayoutFor), so that choosing it never raises a step's
// peak: its slots are as many as fit there after V (at most
// min(ConvSlots(), units)), and none (the route cannot run) when not
// even one fits.
func winoLayoutFor(kind ConvKind, p, q ConvArgs) winoLayout {
	l := winoLayout{th: ceilDiv(q.OH, 2), tw: ceilDiv(q.OW, 2)}
	l.tiles = q.N * l.th * l.tw
	l.nt = winoTiles(q.C, q.K, l.tiles)
	l.units = ceilDiv(l.tiles, l.nt)
	l.filters = 16 * l.vStride(&q)
	l.slot = 16 * (l.uStride(&q) + l.mStride(&q))
	room := convLayoutFor(kind, p, false, 4).total() - convAlign - l.filters
	l.slots = max(0, min(ConvSlots(), l.units, room/l.slot))
	return l
}

// vStride is the words between the packed V_ξ, and uStride and mStride
// those between a unit's U_ξ and between its M_ξ: each rounded up to 16
// words, plus 16 so that the 16 streams the transforms write or read do
// not fall into the same L1 sets (strides of a power of two, 16 KiB for
// U over 64 channels, thrashed an 8-way L1).
func (l winoLayout) vStride(q *ConvArgs) int { return roundUp(convRows(q.K)*q.C, 16) + 16 }

func (l winoLayout) uStride(q *ConvArgs) int { return roundUp(roundUp(l.nt, convPanelNR)*q.C, 16) + 16 }

func (l winoLayout) mStride(q *ConvArgs) int { return roundUp(q.K*l.nt, 16) + 16 }

// total is the words of ws the layout takes, alignment included.
func (l winoLayout) total() int { return convAlign + l.filters + l.slots*l.slot }

// winoWorkspace returns the words the Winograd route takes for kind over
// p, or 0 where it cannot run it.
func winoWorkspace(kind ConvKind, p ConvArgs) int {
	_, l, ok := winoArgs(kind, p)
	if !ok {
		return 0
	}
	return l.total()
}

// winoJob is one Winograd call in flight; jobs are reused and their
// phases built once, so a warm call allocates nothing.
type winoJob struct {
	q    ConvArgs
	flip bool // the input gradient: filters read rotated and transposed
	lay  winoLayout
	// y (N, K, OH, OW) of q from x (N, C, H, W) of q and the caller's w.
	y, x, w    []float32
	v, slots   []float32 // the packed V_ξ, aper words apart; the slots
	aper, step int       // words between the V_ξ (vStride); depth of the GEMMs' kc slices
	kn         *gemmKernel[float32]
	next       atomic.Int64
	units      func(lo, hi int)
	filt       func(lo, hi int)
}

var winoJobs freeList[winoJob]

// runWino runs a float32 call of kind over p through the Winograd route
// for q with layout lay (useWino's): out is y or dx, a is x or dy.
func runWino(kind ConvKind, p, q ConvArgs, lay winoLayout, out, a, w, ws []float32) {
	ws, buf := convScratch(kind.String(), ws, ConvWorkspace(kind, p, ConvF32))
	j := winoJobs.get()
	if j.units == nil {
		j.units, j.filt = j.work, j.filters
	}
	j.q, j.flip, j.lay = q, kind == ConvGradInput, lay
	j.y, j.x, j.w, j.kn = out, a, w, &sgemm
	j.aper, j.step = j.lay.vStride(&q), j.kn.kcFor(q.C)
	j.v = ws[:j.lay.filters]
	j.slots = ws[j.lay.filters:][:j.lay.slots*j.lay.slot]
	panels := ceilDiv(q.K, j.kn.mr)
	ParallelFor(panels, max(1, convPart/(16*9*j.kn.mr*q.C)), j.filt)
	work := q.N * q.K * q.C * 9 * q.OH * q.OW
	parts := max(1, min(Workers(), j.lay.units, work/max(convPart, 1), j.lay.slots))
	j.next.Store(0)
	if parts == 1 {
		j.work(0, 1)
	} else {
		ParallelFor(parts, 1, j.units)
	}
	j.y, j.x, j.w, j.v, j.slots, j.kn = nil, nil, nil, nil, nil, nil
	winoJobs.put(j)
	if buf != nil {
		convBufs.put(buf)
	}
}

// work claims and runs units until none is left, in slot lo.
func (j *winoJob) work(lo, _ int) {
	slot := j.slots[lo*j.lay.slot:][:j.lay.slot]
	for {
		u := int(j.next.Add(1) - 1)
		if u >= j.lay.units {
			return
		}
		j.unit(u, slot)
	}
}

// unit computes the outputs of unit u's tiles in slot: U_ξ (whole packed
// B panels, roundUp(nt, 32)·C words apart) then M_ξ (K × nu, dense, K·nt
// words apart).
func (j *winoJob) unit(u int, slot []float32) {
	q, l := &j.q, &j.lay
	t0 := u * l.nt
	nu := min(l.nt, l.tiles-t0)
	usz, msz := l.uStride(q), l.mStride(q)
	ub, mb := slot[:16*usz], slot[16*usz:][:16*msz]
	j.inputs(ub, usz, t0, nu)
	asz, bsz := wholeASize(j.kn, q.K, q.C), wholeBSize(j.kn, q.C, nu)
	for xi := range 16 {
		g := GemmArgs{M: q.K, N: nu, K: q.C, Alpha: 1, LdA: q.C, LdB: nu, LdC: nu}
		gemmPackedB(j.kn, &sgemmJobs, g, j.v[xi*j.aper:][:asz], operand[float32]{},
			ub[xi*usz:][:bsz], mb[xi*msz:][:q.K*nu])
	}
	j.outputs(mb, msz, t0, nu)
}
