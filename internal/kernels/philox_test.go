package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Known answers from Random123's tests/kat_vectors (checked against copies of
// that file; columns: counter[4] key[2] → output[4]):
//
//	philox4x32 7  00000000 00000000 00000000 00000000 00000000 00000000   5f6fb709 0d893f64 4f121f81 4f730a48
//	philox4x32 7  ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff   5207ddc2 45165e59 4d8ee751 8c52f662
//	philox4x32 7  243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0   4dfccaba 190a87f0 c47362ba b6b5242a
//	philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000   6627e8d5 e169c58d bc57ac4c 9b00dbd8
//	philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff   408f276d 41c83b0e a20bc7c6 6d5451fd
//	philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0   d16cfe09 94fdcceb 5001e420 24126ea1
var philoxKAT = []struct {
	rounds int
	ctr    [4]uint32
	key    [2]uint32
	want   [4]uint32
}{
	{7, [4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}},
	{7, [4]uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}, [2]uint32{^uint32(0), ^uint32(0)}, [4]uint32{0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
	{7, [4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0}, [4]uint32{0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
	{10, [4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
	{10, [4]uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}, [2]uint32{^uint32(0), ^uint32(0)}, [4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
	{10, [4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0}, [4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
}

func TestPhiloxKnownAnswers(t *testing.T) {
	for _, c := range philoxKAT {
		got := philoxRounds(c.rounds, c.ctr, c.key)
		if got != c.want {
			t.Errorf("philox4x32_%d(%08x, %08x) = %08x, want %08x", c.rounds, c.ctr, c.key, got, c.want)
		}
		if c.rounds == 10 {
			if got := Philox4x32(c.ctr, c.key); got != c.want {
				t.Errorf("Philox4x32(%08x, %08x) = %08x, want %08x", c.ctr, c.key, got, c.want)
			}
		}
	}
}

func TestUniform24(t *testing.T) {
	cases := []struct {
		w    uint32
		want float32
	}{
		{0, 0},
		{0xff, 0},
		{0x100, 1.0 / (1 << 24)},
		{0x80000000, 0.5},
		{0xffffffff, 1 - 1.0/(1<<24)},
	}
	for _, c := range cases {
		if got := Uniform24(c.w); got != c.want {
			t.Errorf("Uniform24(%#x) = %g, want %g", c.w, got, c.want)
		}
	}
}

func TestPhiloxStream(t *testing.T) {
	seed := uint64(0x0123456789abcdef)
	s := NewPhiloxStream(seed)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		pos := rng.Uint64() >> uint(rng.IntN(64))
		b := pos / 4
		want := Philox4x32([4]uint32{uint32(b), uint32(b >> 32), 0, 0}, [2]uint32{0x89abcdef, 0x01234567})[pos%4]
		if got := s.Word(pos); got != want {
			t.Fatalf("Word(%d) = %#x, want %#x", pos, got, want)
		}
	}
}

func TestDropoutKernel(t *testing.T) {
	const n = 1 << 16
	src := make([]float64, n)
	for i := range src {
		src[i] = 1 + float64(i%7)
	}
	dst := make([]float64, n)
	p := 0.3
	l := Layout{Shape: []int{n}}
	Dropout(dst, l, src, l, p, 42, 8)
	s := NewPhiloxStream(42)
	kept := 0
	for i := range dst {
		keep := float64(s.Uniform(8+uint64(i))) >= p
		want := 0.0
		if keep {
			want = src[i] / (1 - p)
			kept++
		}
		if math.Abs(dst[i]-want) > 1e-12 {
			t.Fatalf("Dropout element %d = %g, want %g", i, dst[i], want)
		}
	}
	// Binomial(n, 1-p): within 4 standard deviations.
	mean, sd := n*(1-p), math.Sqrt(n*p*(1-p))
	if math.Abs(float64(kept)-mean) > 4*sd {
		t.Errorf("kept %d of %d with p=%g, want %.0f ± %.0f", kept, n, p, mean, 4*sd)
	}
}

// TestDropoutStrided checks that a strided source draws the mask of its
// row-major element order: dropping a transposed view equals dropping a
// contiguous copy of it.
func TestDropoutStrided(t *testing.T) {
	rows, cols := 5, 7
	rng := rand.New(rand.NewPCG(3, 4))
	base := make([]float32, 3+rows*cols) // with a leading offset
	for i := range base {
		base[i] = rng.Float32()
	}
	// view (cols, rows) of the (rows, cols) matrix at offset 3, transposed
	view := Layout{Off: 3, Shape: []int{cols, rows}, Strides: []int{1, cols}}
	dense := make([]float32, rows*cols)
	for c := range cols {
		for r := range rows {
			dense[c*rows+r] = base[3+r*cols+c]
		}
	}
	a := make([]float32, rows*cols+2)
	b := make([]float32, rows*cols)
	Dropout(a, Layout{Off: 2, Shape: []int{cols, rows}}, base, view, 0.5, 9, 100)
	Dropout(b, Layout{Shape: []int{cols, rows}}, dense, Layout{Shape: []int{cols, rows}}, 0.5, 9, 100)
	for i := range b {
		if a[2+i] != b[i] {
			t.Fatalf("strided dropout element %d = %g, contiguous %g", i, a[2+i], b[i])
		}
	}
}

// TestPhiloxRange checks PhiloxRange on every path (AVX-512 and AVX2 where
// the CPU has them, then Go) against Philox4x32 block by block: lengths around the
// 16-block groups, counters whose low word carries into the high word
// mid-range, and a range wrapping 2⁶⁴.
func TestPhiloxRange(t *testing.T) {
	saved := CPU
	defer func() { CPU = saved }()
	rng := rand.New(rand.NewPCG(5, 6))
	firsts := []uint64{0, 1<<32 - 21, ^uint64(0) - 30, rng.Uint64()}
	for _, path := range []Features{saved, {AVX2FMA: saved.AVX2FMA}, {}} {
		CPU = path
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 47, 48, 100} {
			for _, first := range firsts {
				upper := [2]uint32{rng.Uint32(), rng.Uint32()}
				key := [2]uint32{rng.Uint32(), rng.Uint32()}
				dst := make([][4]uint32, n+1)
				dst[n] = [4]uint32{1, 2, 3, 4} // guard: must stay
				PhiloxRange(dst[:n], first, upper, key)
				for b := range n {
					c := first + uint64(b)
					want := Philox4x32([4]uint32{uint32(c), uint32(c >> 32), upper[0], upper[1]}, key)
					if dst[b] != want {
						t.Fatalf("path %q, n %d, first %#x: block %d is %08x, want %08x", path.Path(), n, first, b, dst[b], want)
					}
				}
				if dst[n] != [4]uint32{1, 2, 3, 4} {
					t.Fatalf("path %q, n %d: wrote past the end", path.Path(), n)
				}
			}
		}
	}
}

// BenchmarkPhiloxRange times 4096 blocks (64 KiB of words) by PhiloxRange
// on the CPU's widest path ("asm") and on AVX2 ("avx2"), its Go twin
// ("go") and one Philox4x32 call a block ("scalar").
func BenchmarkPhiloxRange(b *testing.B) {
	dst := make([][4]uint32, 4096)
	key := [2]uint32{1, 2}
	saved := CPU
	defer func() { CPU = saved }()
	for _, path := range []string{"scalar", "go", "avx2", "asm"} {
		CPU = saved
		if path == "avx2" {
			CPU = Features{AVX2FMA: saved.AVX2FMA}
		}
		b.Run(path, func(b *testing.B) {
			b.SetBytes(int64(16 * len(dst)))
			for range b.N {
				switch path {
				case "scalar":
					for i := range dst {
						dst[i] = Philox4x32([4]uint32{uint32(i), 0, 3, 0}, key)
					}
				case "go":
					philoxRangeGo(dst, 0, [2]uint32{3, 0}, key)
				default:
					PhiloxRange(dst, 0, [2]uint32{3, 0}, key)
				}
			}
		})
	}
}

// blockOf returns a Philox block whose 53-bit uniforms are m1·2⁻⁵³ and
// m2·2⁻⁵³ (low 11 bits of each pair random).
func blockOf(rng *rand.Rand, m1, m2 uint64) [4]uint32 {
	v1, v2 := m1<<11|rng.Uint64()&0x7ff, m2<<11|rng.Uint64()&0x7ff
	return [4]uint32{uint32(v1 >> 32), uint32(v1), uint32(v2 >> 32), uint32(v2)}
}

// TestPhiloxNormal checks PhiloxNormal (AVX-512 and AVX2 where the CPU
// has them) against its Go twin (math.Log, math.Sincos) bit for bit, on random
// blocks and on edges: u₁ = 0 and its largest value, 1−u₁ at and around
// √2/2 (the frexp adjustment of math.Log), u₂ at and around every octant
// k/8 of the circle, counts that are not multiples of 8.
func TestPhiloxNormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const top = 1<<53 - 1
	half := math.Sqrt2 / 2
	hs := uint64((1 - half) * 0x1p53) // 1−u₁ = √2/2 exactly
	var blocks [][4]uint32
	for _, m1 := range []uint64{0, 1, top, top - 1, hs - 2, hs - 1, hs, hs + 1, hs + 2, 1 << 52} {
		for k := range uint64(9) {
			for d := -3; d <= 3; d++ {
				m2 := min(max(int64(k<<50)+int64(d), 0), top)
				blocks = append(blocks, blockOf(rng, m1, uint64(m2)))
			}
		}
	}
	for range 1 << 16 {
		blocks = append(blocks, [4]uint32{rng.Uint32(), rng.Uint32(), rng.Uint32(), rng.Uint32()})
	}
	saved := CPU
	defer func() { CPU = saved }()
	for _, path := range []Features{saved, {AVX2FMA: saved.AVX2FMA}} {
		CPU = path
		checkNormal(t, blocks)
	}
}

// checkNormal compares PhiloxNormal on the current path with its Go twin.
func checkNormal(t *testing.T, blocks [][4]uint32) {
	t.Helper()
	for _, n := range []int{len(blocks), len(blocks) - 3, 3, 7, 9} {
		for _, ms := range [][2]float64{{0, 1}, {0.5, 0.02}, {-3, 7}} {
			got := make([]float64, 2*n+1)
			got[2*n] = 42 // guard
			want := make([]float64, 2*n)
			PhiloxNormal(got[:2*n], blocks[:n], ms[0], ms[1])
			philoxNormalGo(want, blocks[:n], ms[0], ms[1])
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					w := blocks[i/2]
					t.Fatalf("path %q, %d blocks, mean %g std %g: element %d (u1 %v, u2 %v) is %v, Go %v", CPU.Path(), n, ms[0], ms[1], i,
						Uniform53(w[0], w[1]), Uniform53(w[2], w[3]), got[i], want[i])
				}
			}
			if got[2*n] != 42 {
				t.Fatalf("n %d: wrote past the end", n)
			}
		}
	}
}
