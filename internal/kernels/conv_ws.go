package kernels

import (
	"fmt"
	"unsafe"
)

// A convolution's scratch, all of it in the caller's workspace ws, laid
// out from ws's first 64-byte boundary (convLayout):
//
//   - the packed filters of the forward pass and of the input gradient
//     (pack_whole.go): G·rows(K/G)·C/G·R·S elements forward, G·blocks·
//     rows(block·R·S)·K/G for the input gradient, rows(m) the m rows
//     rounded up to whole panels of any kernel that may run them
//     (convRows);
//   - the weight gradient's copies of dw, one per chunk of samples after
//     the first, plus the float32 dw a 16-bit dw is summed in: each
//     K·C/G·R·S elements;
//   - min(ConvSlots(), units) tiles of one worker, each rounded up to 16
//     elements.
//
// Each region is rounded up to 16 elements, and 16 more allow for the
// alignment. A bfloat16 input gradient that runs as the forward
// convolution by flipped filters (conv_flip.go) puts the flipped filters
// first (K·C/G·R·S 16-bit values) and that convolution's workspace after
// them; ConvWorkspace is the larger of the two routes, whatever the CPU,
// so that it depends on the convolution alone.

// ConvSlots returns the most workers one convolution call runs on: its
// workspace holds one tile for each (fewer when the call has fewer
// units). It is 8, or the kernels' worker count (Workers) where that is
// larger, so that up to 8 cores the size does not depend on the machine
// and a bigger machine still runs every worker; a plan and a run in one
// process read the same count.
func ConvSlots() int { return max(minConvSlots, Workers()) }

// minConvSlots is ConvSlots' floor.
const minConvSlots = 8

// ConvOperands says how a convolution's operands are held, which sets the
// element ConvWorkspace counts in: float32 for ConvF32 and ConvHalf,
// float64 for ConvF64.
type ConvOperands int

// The operand kinds.
const (
	ConvF32  ConvOperands = iota // float32 operands (Conv2d[float32] and its gradients)
	ConvF64                      // float64 operands
	ConvHalf                     // 16-bit inputs (Conv2dHalf and its gradients), sized for a 16-bit output
)

// String returns the kernel's name.
func (k ConvKind) String() string {
	switch k {
	case ConvForward:
		return "Conv2d"
	case ConvGradInput:
		return "Conv2dGradInput"
	}
	return "Conv2dGradWeight"
}

// ConvWorkspace returns the elements of ws (float64 for ConvF64, else
// float32 words) kind needs for p: see the layout above. It is 0 only
// for a call with nothing to compute.
func ConvWorkspace(kind ConvKind, p ConvArgs, op ConvOperands) int {
	if p.Groups <= 0 {
		return 0
	}
	size := 4
	if op == ConvF64 {
		size = 8
	}
	n := convLayoutFor(kind, p, op == ConvHalf, size).total()
	if q, ok := p.flipGradInput(); ok && kind == ConvGradInput && op == ConvHalf {
		n = max(n, convAlign+flipWords(p)+ConvWorkspace(ConvForward, q, ConvHalf))
	}
	return n
}

// convAlign is the elements a layout allows for aligning ws's start.
const convAlign = 16

// convLayout is the sizes of a call's regions of ws, in elements: the
// packed filters, the weight gradient's copies of dw, and slots tiles
// stride apart.
type convLayout struct {
	filters, parts int
	slots, stride  int
}

// total is the elements of ws the layout takes, alignment included (0
// when it takes none).
func (l convLayout) total() int {
	n := l.filters + l.parts + l.slots*l.stride
	if n == 0 {
		return 0
	}
	return convAlign + n
}

// convLayoutFor returns the layout of a call of kind over p (p.Groups >
// 0) with filter elements of size bytes (16-bit inputs when half: sized
// for a 16-bit output, which takes the most).
func convLayoutFor(kind ConvKind, p ConvArgs, half bool, size int) convLayout {
	d := p.dims()
	c := convPlan{kind: kind, half: half, narrow: half, size: size}
	c.plan(&p, &d)
	if c.units == 0 || (kind == ConvGradWeight && (p.N == 0 || d.ohw == 0)) {
		return convLayout{}
	}
	var l convLayout
	switch kind {
	case ConvForward:
		l.filters = p.Groups * convRows(d.kg) * d.crs
	case ConvGradInput:
		l.filters = p.Groups * c.blocks * convRows(c.block*p.R*p.S) * d.kg
	default:
		copies := c.chunks - 1
		if half {
			copies++
		}
		l.parts = copies * p.K * d.crs
	}
	l.filters, l.parts = roundUp(l.filters, 16), roundUp(l.parts, 16)
	if c.tile > 0 {
		l.slots, l.stride = min(ConvSlots(), c.units), roundUp(c.tile, 16)
	}
	return l
}

// convRows is m rows rounded up to whole panels of every GEMM kernel that
// may pack a convolution's filters: mr 6 or 12 (float32, float64,
// bfloat16 pairs) and 32 (AMX).
func convRows(m int) int { return max(roundUp(m, 12), roundUp(m, 32)) }

// flipWords is the float32 words the flipped filters of p's bfloat16
// input gradient take, K·C/G·R·S 16-bit values rounded up to 16 words.
func flipWords(p ConvArgs) int {
	return roundUp(ceilDiv(p.K*(p.C/p.Groups)*p.R*p.S, 2), 16)
}

// convScratch returns ws from its first 64-byte boundary when it holds
// need elements; a nil ws (a caller outside a device: tests, benchmarks)
// gets a reused Go-heap buffer instead, which the caller gives back with
// convBufs.put. A shorter ws is the caller's error and panics.
func convScratch[T Float](op string, ws []T, need int) ([]T, *convBuf) {
	if need == 0 {
		return nil, nil
	}
	if ws == nil {
		buf := convBufs.get()
		return scratchView[T](&buf.b, need), buf
	}
	if len(ws) < need {
		panic(fmt.Sprintf("kernels.%s: workspace of %d elements, want %d (ConvWorkspace)", op, len(ws), need))
	}
	var z T
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(ws)))
	skip := int((64-addr%64)%64) / int(unsafe.Sizeof(z))
	return ws[skip:need], nil
}
