package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// pairAsmOrSkip skips unless the pair packers run in assembly here.
func pairAsmOrSkip(t *testing.T) {
	t.Helper()
	if !pairPackAsm(32) {
		t.Skip("pair packers run in Go only: this CPU lacks AVX-512 (or the build is noasm)")
	}
}

// withGoPacking runs f with the assembly paths off, so that the pair
// packers take their Go twins.
func withGoPacking(f func()) {
	saved := CPU
	CPU = Features{}
	defer func() { CPU = saved }()
	f()
}

// pairShape is one call of packPairs: count lines of kc values from
// random 16-bit words at offset at, lines xs apart and depths ps apart,
// into panels of w.
type pairShape struct{ at, xs, ps, x0, count, w, kc int }

func (s pairShape) String() string {
	return fmt.Sprintf("at=%d xs=%d ps=%d x0=%d count=%d w=%d kc=%d", s.at, s.xs, s.ps, s.x0, s.count, s.w, s.kc)
}

// checkPairShape packs s with the assembly and with the Go twin into
// buffers prefilled with the same junk (the panels' unused slot words and
// a tail beyond them must stay as they were) and compares every word.
func checkPairShape(t *testing.T, r *rand.Rand, s pairShape) {
	t.Helper()
	n := s.at + (s.x0+s.count-1)*s.xs + (s.kc-1)*s.ps + 1
	h := make([]uint16, n)
	for i := range h {
		h[i] = uint16(r.Uint32())
	}
	size := ceilDiv(s.count, s.w)*s.w*s.kc + 7
	got, want := make([]uint32, size), make([]uint32, size)
	for i := range got {
		got[i] = 0xDEAD0000 | uint32(i)
		want[i] = got[i]
	}
	packPairs(got, h, s.at, s.xs, s.ps, s.x0, s.count, s.w, s.kc)
	withGoPacking(func() { packPairs(want, h, s.at, s.xs, s.ps, s.x0, s.count, s.w, s.kc) })
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%v: word %d (panel %d, pair %d, line %d) = %#08x, Go twin %#08x", s, i,
				i/(s.w*s.kc), i%(s.w*s.kc)/s.w, i%s.w, got[i], want[i])
		}
	}
}

// TestPairPackersMatchGo compares the assembly pair packers with their Go
// twins, word for word, over both layouts (rows: adjacent lines; lines:
// contiguous depth runs), both panel widths, every depth up to 70 and the
// block sizes' edges (odd and even, a short last 16-pair block), line
// counts across one and two panels, and odd offsets and strides.
func TestPairPackersMatchGo(t *testing.T) {
	pairAsmOrSkip(t)
	r := rand.New(rand.NewPCG(21, 22))
	var kcs []int
	for kc := 1; kc <= 70; kc++ {
		kcs = append(kcs, kc)
	}
	kcs = append(kcs, 95, 96, 97, 191, 192, 193, 383, 384)
	for _, w := range []int{12, 32} {
		counts := []int{1, 2, 5, w - 1, w, w + 1, 2*w - 3, 2*w + 7}
		if w == 32 {
			counts = append(counts, 15, 16, 17)
		}
		for _, kc := range kcs {
			for i, count := range counts {
				at, x0 := (i+kc)%4, i%3
				// rows: lines adjacent, depths ps ≥ the lines spanned apart
				ps := x0 + count + i%5
				checkPairShape(t, r, pairShape{at: at, xs: 1, ps: ps, x0: x0, count: count, w: w, kc: kc})
				// lines: depth runs contiguous, lines xs ≥ kc apart
				xs := kc + (i*7+kc)%6
				checkPairShape(t, r, pairShape{at: at, xs: xs, ps: 1, x0: x0, count: count, w: w, kc: kc})
			}
		}
	}
}

// TestPairPackEntriesMatchGo packs blocks of op(A) and op(B), transposed
// and not, at odd offsets and depths, through packA and packB on the
// pair kernel, with the assembly and with the Go twins, and compares the
// packed words.
func TestPairPackEntriesMatchGo(t *testing.T) {
	pairAsmOrSkip(t)
	kn := &gemmKernel[float32]{mr: 12, nr: 32, mc: 240, kc: 384, nc: 2048, pairs: true}
	r := rand.New(rand.NewPCG(23, 24))
	const rows, cols, ld = 70, 90, 97
	h := make([]uint16, rows*ld+5)
	for i := range h {
		h[i] = uint16(r.Uint32())
	}
	src := operand[float32]{h: h, bf16: true}
	for _, trans := range []bool{false, true} {
		for _, sh := range [][4]int{{0, 25, 0, 13}, {3, 24, 1, 64}, {5, 33, 2, 37}, {1, 60, 3, 1}, {0, 1, 0, 2}} {
			x0, nx, p0, kc := sh[0], sh[1], sh[2], sh[3]
			for _, b := range []bool{false, true} {
				w := kn.mr
				if b {
					w = kn.nr
				}
				size := ceilDiv(nx, w) * w * kc
				got, want := make([]float32, size), make([]float32, size)
				pack := func(dst []float32) {
					if b {
						packB(kn, dst, src, 3, ld, trans, p0, kc, x0, nx, nil)
					} else {
						packA(kn, dst, src, 3, ld, trans, x0, nx, p0, kc, 1, nil)
					}
				}
				pack(got)
				withGoPacking(func() { pack(want) })
				for i, v := range words(got) {
					if v != words(want)[i] {
						t.Fatalf("B=%v trans=%v shape %v: word %d = %#08x, Go twin %#08x", b, trans, sh, i, v, words(want)[i])
					}
				}
			}
		}
	}
}
