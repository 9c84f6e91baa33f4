package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAMXKernelInPlace runs the AMX kernel with A read in place (fullAt)
// from bfloat16 rows of values over 24 binades, at odd offsets and row
// distances, for one to five steps and every mode, and compares the whole
// C buffer bit for bit with the Go twin on the same rows packed by
// packAAMX.
func TestAMXKernelInPlace(t *testing.T) {
	kn := amxOrSkip(t)
	r := rand.New(rand.NewPCG(41, 42))
	ldc := 35
	for _, k := range []int{32, 64, 96, 160} {
		for _, ld := range []int{k, k + 1, k + 37} {
			at := r.IntN(7)
			h := make([]uint16, at+32*ld)
			copy(h, words16(amxWide(r, (len(h)+1)/2)))
			b := amxWide(r, 512*(k/32))
			panel := make([]float32, 32*k)
			packAAMX(panel, h, at, ld, false, 0, 32, 0, k)
			c0 := gemmToT[float32](gemmRand(r, 32*ldc))
			for mode, beta := range []float32{0, 1, -0.3} {
				got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
				kn.fullAt(k, h, at, ld, b, got, ldc, beta, mode)
				amxGo(k, panel, b, want, ldc, beta, mode)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("k=%d ld=%d at=%d mode=%d: c[%d][%d] = %g, Go twin %g",
							k, ld, at, mode, i/ldc, i%ldc, got[i], want[i])
					}
				}
			}
		}
	}
}

// words16 views pair words as the bfloat16 halves they hold.
func words16(p []float32) []uint16 {
	w := words(p)
	h := make([]uint16, 2*len(w))
	for i, v := range w {
		h[2*i], h[2*i+1] = uint16(v), uint16(v>>16)
	}
	return h
}

// TestGemmHalfAMXInPlace runs products whose A the driver reads in place
// (not transposed, every kc slice whole 32-deep steps: K = 64, 640 and
// 1024 cut into 320, 320 and 512, 512) with short last row panels, edge columns,
// offsets, padded rows, bias-free beta 0, 1 and other, and a batch,
// bit for bit against the driver on the Go twin, which packs every panel.
func TestGemmHalfAMXInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for i, tc := range []gemmCase{
		{m: 300, n: 100, k: 1024, alpha: 1, beta: 0.3, batch: 1, pad: [3]int{5, 0, 2}, off: [3]int{3, 1, 0}},
		{m: 64, n: 48, k: 64, alpha: 1, beta: 1, batch: 3, off: [3]int{1, 0, 0}},
		{tb: true, m: 257, n: 96, k: 640, alpha: 1, beta: 0, batch: 1, pad: [3]int{0, 3, 0}, nanC: true},
		{m: 600, n: 33, k: 96, alpha: 1, beta: 0, batch: 1},
	} {
		if i == 0 && (testing.Short() || raceEnabled) {
			continue
		}
		checkAMXCase(t, r, tc)
	}
}

// TestKcForAMX checks the AMX kernel's slices: whole 32-deep steps, as
// few as kc allows.
func TestKcForAMX(t *testing.T) {
	kn := goAMXKernel()
	for _, c := range []struct{ k, kc int }{{64, 512}, {512, 512}, {640, 320}, {768, 384}, {1056, 352}, {4096, 512}} {
		if got := kn.kcFor(c.k); got != c.kc {
			t.Errorf("kcFor(%d) = %d, want %d", c.k, got, c.kc)
		}
	}
}

// TestAMXKernelBias checks the kernel's bias start (fullBias), with A
// packed and read in place, bit for bit against the Go twin in mode 1 on
// a C holding the bias in every row.
func TestAMXKernelBias(t *testing.T) {
	kn := amxOrSkip(t)
	r := rand.New(rand.NewPCG(47, 48))
	ldc := 33
	for _, k := range []int{32, 64, 128} {
		ld := k + 6
		h := words16(amxWide(r, 16*ld))
		panel := make([]float32, 32*k)
		packAAMX(panel, h, 1, ld, false, 0, 32, 0, k)
		b := amxWide(r, 512*(k/32))
		bias := gemmToT[float32](gemmRand(r, 32))
		want := make([]float32, 32*ldc)
		for row := range 32 {
			copy(want[row*ldc:], bias)
		}
		amxGo(k, panel, b, want, ldc, 0, 1)
		for _, inPlace := range []bool{false, true} {
			got := make([]float32, 32*ldc)
			if inPlace {
				kn.fullBias(k, h, 1, ld, nil, b, bias, got, ldc)
			} else {
				kn.fullBias(k, nil, 0, 0, panel, b, bias, got, ldc)
			}
			for i := range got {
				if i%ldc < 32 && math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("k=%d in place %v: c[%d][%d] = %g, Go twin %g", k, inPlace, i/ldc, i%ldc, got[i], want[i])
				}
			}
		}
	}
}

// TestGemmHalfAMXBias runs GemmHalfBias on the AMX kernel (its bias
// start, A in place and packed) bit for bit against the driver on the Go
// twin, which copies the bias into C and adds to it.
func TestGemmHalfAMXBias(t *testing.T) {
	r := rand.New(rand.NewPCG(49, 50))
	for _, tc := range []gemmCase{
		{m: 96, n: 80, k: 64, alpha: 1, batch: 1, pad: [3]int{1, 0, 3}},
		{ta: true, m: 70, n: 64, k: 100, alpha: 1, batch: 1},
		{m: 64, n: 64, k: 96, alpha: 1, beta: 0.5, batch: 1},
		{tb: true, m: 40, n: 96, k: 1024, alpha: 1, batch: 2},
	} {
		g, ah, bh, c := bf16CaseInputs(r, tc)
		bias := gemmToT[float32](gemmRand(r, tc.n))
		want := append([]float32(nil), c...)
		var jobs freeList[gemmJob[float32]]
		withGoPacking(func() {
			gemmBias(goAMXKernel(), &jobs, g, operand[float32]{h: ah, bf16: true}, operand[float32]{h: bh, bf16: true}, bias, want)
		})
		if amxgemm == nil {
			continue
		}
		got := append([]float32(nil), c...)
		GemmHalfBias(g, ah, bh, true, true, bias, got)
		for j := range got {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("%v: c[%d] = %g, driver on the Go twin %g", tc, j, got[j], want[j])
			}
		}
	}
}

// TestAMXStepColsFast compares the in-register transpose of one step of
// an A panel from Aᵀ with its Go twin, bit for bit, at several row
// distances and offsets.
func TestAMXStepColsFast(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for _, ld := range []int{32, 33, 64, 100, 257} {
		at := r.IntN(5)
		h := make([]uint16, at+31*ld+32)
		for i := range h {
			h[i] = uint16(r.Uint32())
		}
		var got, want [512]uint32
		if !amxStepColsFast(&got, h, at, ld) {
			t.Skip("no AVX-512 packer here")
		}
		amxStepCols(&want, h, at, ld)
		if got != want {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("ld %d: dword %d (row %d, pair %d) = %#08x, Go twin %#08x", ld, i, i/16, i%16, got[i], want[i])
				}
			}
		}
	}
}
