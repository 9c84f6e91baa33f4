package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQuantizeRoundTrip quantizes random rows (per row and per tensor, with
// ties and out-of-range values mixed in) and checks every element against
// a float64 reference: q is round-half-even of x·(1/scale) clamped to ±127,
// and inside the range the round trip q·scale is within half a step (plus
// the rounding of x·(1/scale)).
func TestQuantizeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1))
	for trial := range 40 {
		rows, cols := 1+rng.IntN(9), 1+rng.IntN(300)
		x := make([]float32, rows*cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * math.Exp(rng.Float64()*4-2))
		}
		if trial%4 == 0 {
			for i := 0; i < len(x); i += 7 {
				x[i] = float32(rng.IntN(255)-127) + 0.5 // ties once scaled by 1
			}
		}
		scales := make([]float32, rows)
		QuantScales(scales, x, rows)
		for r := range rows {
			m := 0.0
			for _, v := range x[r*cols : (r+1)*cols] {
				m = max(m, math.Abs(float64(v)))
			}
			want := max(float32(float32(m)/QuantMax), MinQuantScale)
			if scales[r] != want {
				t.Fatalf("trial %d: QuantScales row %d = %g, want %g", trial, r, scales[r], want)
			}
		}
		perTensor := trial%2 == 1
		sc := scales
		if perTensor {
			sc = []float32{scales[0] * 0.5} // half the range: some values clip
		}
		if trial%4 == 0 {
			sc = []float32{1}
		}
		q := make([]int8, len(x))
		Quantize(q, x, sc, rows)
		fq := make([]float32, len(x))
		FakeQuantize(fq, x, sc, rows)
		for i, v := range x {
			s := scaleAt(sc, i/cols)
			inv := float64(float32(1 / s))
			want := math.RoundToEven(math.Max(-127, math.Min(127, float64(float32(float64(v)*inv)))))
			if float64(q[i]) != want {
				t.Fatalf("trial %d: Quantize(%g, scale %g)[%d] = %d, want %g", trial, v, s, i, q[i], want)
			}
			if fq[i] != float32(q[i])*s {
				t.Fatalf("trial %d: FakeQuantize(%g) = %g, want q·scale = %g", trial, v, fq[i], float32(q[i])*s)
			}
			if math.Abs(float64(v)) <= 127*float64(s) {
				if e := math.Abs(float64(v) - float64(q[i])*float64(s)); e > float64(s)*(0.5+1.0/65536) {
					t.Fatalf("trial %d: |x − q·s| = %g for x %g, scale %g: above half a step", trial, e, v, s)
				}
			}
		}
	}
}

// TestQuantScalesZeroRow gives an all-zero row the floor scale, whose
// values quantize to 0.
func TestQuantScalesZeroRow(t *testing.T) {
	s := make([]float32, 2)
	x := []float32{0, 0, 0, 1, -3, 2}
	QuantScales(s, x, 2)
	if s[0] != MinQuantScale || s[1] != 3.0/127 {
		t.Fatalf("QuantScales = %v, want [%g %g]", s, MinQuantScale, 3.0/127)
	}
	q := make([]int8, 6)
	Quantize(q, x, s, 2)
	if q[0] != 0 || q[4] != -127 || q[3] != 42 {
		t.Fatalf("Quantize = %v", q)
	}
}

// TestFakeQuantizeGradMask checks the straight-through mask in float32 and
// float64: the gradient passes where x/scale rounds inside ±127.
func TestFakeQuantizeGradMask(t *testing.T) {
	x := []float32{0, 1.2, -126.9, 127.4, 127.6, -127.6, 300, -0.4}
	dy := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	want := []float32{1, 2, 3, 4, 0, 0, 0, 8}
	dx := make([]float32, len(x))
	FakeQuantizeGrad(dx, dy, x, []float32{1}, 1)
	x64, dy64, dx64 := make([]float64, len(x)), make([]float64, len(x)), make([]float64, len(x))
	for i := range x {
		x64[i], dy64[i] = float64(x[i]), float64(dy[i])
	}
	FakeQuantizeGrad(dx64, dy64, x64, []float32{1}, 1)
	for i := range want {
		if dx[i] != want[i] || dx64[i] != float64(want[i]) {
			t.Fatalf("FakeQuantizeGrad at x = %g: %g (f32), %g (f64), want %g", x[i], dx[i], dx64[i], want[i])
		}
	}
	fq := make([]float64, len(x))
	FakeQuantize(fq, x64, []float32{1}, 1)
	for i, v := range []float64{0, 1, -127, 127, 127, -127, 127, -0} {
		if fq[i] != v {
			t.Fatalf("FakeQuantize f64(%g) = %g, want %g", x64[i], fq[i], v)
		}
	}
}

// TestGemmI8T compares the Bᵀ product with an int64 reference.
func TestGemmI8T(t *testing.T) { i8Layouts(t, testGemmI8T) }

func testGemmI8T(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 2))
	for range 30 {
		m, n, k := 1+rng.IntN(40), 1+rng.IntN(40), 1+rng.IntN(600)
		lda, ldb, ldc := k+rng.IntN(3), k+rng.IntN(3), n+rng.IntN(3)
		a, b := randI8(rng, m*lda, false), randI8(rng, n*ldb, rng.IntN(4) == 0)
		c := make([]int32, m*ldc)
		GemmI8T(m, n, k, a, lda, b, ldb, c, ldc)
		for i := range m {
			for j := range n {
				var want int64
				for p := range k {
					want += int64(a[i*lda+p]) * int64(b[j*ldb+p])
				}
				if int64(c[i*ldc+j]) != want {
					t.Fatalf("GemmI8T %d×%d×%d: C[%d][%d] = %d, want %d", m, n, k, i, j, c[i*ldc+j], want)
				}
			}
		}
	}
}

// TestConv2dI8 compares the quantized convolution, bit for bit, with a
// direct reference: the exact integer sum over the window, then the
// epilogue's float32 operations, over random shapes (groups, strides,
// padding, dilation) and chunk sizes.
func TestConv2dI8(t *testing.T) { i8Layouts(t, testConv2dI8) }

func testConv2dI8(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 3))
	// Fixed shapes that take im2colI8's stride-1 "same" path, then random
	// ones.
	same := []ConvArgs{
		{N: 3, C: 2, H: 5, W: 6, K: 3, R: 3, S: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 1},
		{N: 2, C: 2, H: 7, W: 7, K: 4, R: 5, S: 5, StrideH: 1, StrideW: 1, PadH: 2, PadW: 2, DilH: 1, DilW: 1, Groups: 2},
		{N: 2, C: 3, H: 6, W: 5, K: 2, R: 3, S: 3, StrideH: 1, StrideW: 1, PadH: 2, PadW: 2, DilH: 2, DilW: 2, Groups: 1},
		{N: 1, C: 4, H: 4, W: 3, K: 5, R: 1, S: 1, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1, Groups: 1},
		{N: 2, C: 1, H: 2, W: 9, K: 2, R: 3, S: 1, StrideH: 1, StrideW: 1, PadH: 0, PadW: 0, DilH: 1, DilW: 1, Groups: 1},
		{N: 1, C: 1, H: 1, W: 1, K: 1, R: 3, S: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 1},
		// The stride-2 phase path: even W with OW = W/2 (3×3 padded, 1×1
		// unpadded, odd H, dilation, groups, a 1-wide output).
		{N: 3, C: 2, H: 8, W: 8, K: 3, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 1},
		{N: 2, C: 3, H: 7, W: 10, K: 2, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 1},
		{N: 2, C: 4, H: 6, W: 6, K: 4, R: 1, S: 1, StrideH: 2, StrideW: 2, DilH: 1, DilW: 1, Groups: 2},
		{N: 1, C: 2, H: 9, W: 12, K: 3, R: 5, S: 5, StrideH: 2, StrideW: 2, PadH: 2, PadW: 2, DilH: 1, DilW: 1, Groups: 1},
		{N: 1, C: 2, H: 8, W: 8, K: 2, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 2, PadW: 2, DilH: 2, DilW: 2, Groups: 1},
		{N: 2, C: 1, H: 2, W: 2, K: 2, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 1},
	}
	for i := range same {
		p := &same[i]
		p.OH = (p.H+2*p.PadH-p.DilH*(p.R-1)-1)/p.StrideH + 1
		p.OW = (p.W+2*p.PadW-p.DilW*(p.S-1)-1)/p.StrideW + 1
	}
	phasePath := 0
	defer func() {
		if phasePath < 6 {
			t.Errorf("%d trials took the stride-2 phase path, want at least 6", phasePath)
		}
	}()
	for trial := range 80 + len(same) {
		var p ConvArgs
		if trial < len(same) {
			p = same[trial]
		} else {
			p = randConv(rng)
		}
		xq := randI8(rng, p.N*p.C*p.H*p.W, trial%9 == 0)
		wq := randI8(rng, p.K*p.C/p.Groups*p.R*p.S, trial%9 == 0)
		ws := make([]float32, p.K)
		bias := make([]float32, p.K)
		for i := range ws {
			ws[i], bias[i] = float32(rng.Float64()*0.01), float32(rng.NormFloat64())
		}
		if trial%3 == 0 {
			bias = nil
		}
		xs, relu := float32(0.02+rng.Float64()*0.01), trial%2 == 0
		if p.StrideH == 2 && p.StrideW == 2 && p.W%2 == 0 && p.OW == p.W/2 {
			phasePath++
		}
		chunk := 1 + rng.IntN(p.N+1)
		cw, aw := p.I8Workspace(chunk)
		y := make([]float32, p.N*p.K*p.OH*p.OW)
		Conv2dI8(p, y, xq, wq, xs, ws, bias, relu, chunk, make([]int8, cw), make([]int32, aw))
		cg, kg := p.C/p.Groups, p.K/p.Groups
		for n := range p.N {
			for k := range p.K {
				g := k / kg
				for oh := range p.OH {
					for ow := range p.OW {
						var acc int64
						for c := range cg {
							for r := range p.R {
								for s := range p.S {
									h, w := oh*p.StrideH-p.PadH+r*p.DilH, ow*p.StrideW-p.PadW+s*p.DilW
									if h < 0 || h >= p.H || w < 0 || w >= p.W {
										continue
									}
									acc += int64(xq[((n*p.C+g*cg+c)*p.H+h)*p.W+w]) * int64(wq[((k*cg+c)*p.R+r)*p.S+s])
								}
							}
						}
						b := float32(0)
						if bias != nil {
							b = bias[k]
						}
						want := float32(float32(acc)*(xs*ws[k])) + b
						if relu && !(want > 0) {
							want = 0
						}
						if got := y[((n*p.K+k)*p.OH+oh)*p.OW+ow]; got != want {
							t.Fatalf("trial %d %+v chunk %d: y[%d][%d][%d][%d] = %g, want %g", trial, p, chunk, n, k, oh, ow, got, want)
						}
					}
				}
			}
		}
	}
}

// TestQuantAsmMatchesGo compares the assembly loops (through the kernels,
// which use them for whole blocks) with their Go twins element by element,
// bit for bit, on data with ties, clipping values, ±0, ±Inf and NaN, at
// lengths that leave tails of every size.
func TestQuantAsmMatchesGo(t *testing.T) {
	if !CPU.AVX2FMA {
		t.Skip("no AVX2: the Go loops are the only path")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	special := []float32{0, float32(math.Copysign(0, -1)), 0.5, 1.5, 2.5, -2.5, 126.5, -126.5, 127.5, -127.5, 1e30, -1e30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for _, n := range []int{32, 33, 63, 64, 100, 257} {
		x := make([]float32, n)
		for i := range x {
			if rng.IntN(4) == 0 {
				x[i] = special[rng.IntN(len(special))]
			} else {
				x[i] = float32(rng.NormFloat64() * 100)
			}
		}
		// Quantize with scale 1 (inv 1): ties and clipping as they are.
		q := make([]int8, n)
		quantizeRun(q, x, 1)
		for i, v := range x {
			if want := int8(quantInt(v)); q[i] != want {
				t.Fatalf("n %d: quantize(%g) = %d, Go twin %d", n, v, q[i], want)
			}
		}
		// AbsMax: the bit patterns' maximum, NaN above everything.
		var want uint32
		for _, v := range x {
			want = max(want, math.Float32bits(v)&^(1<<31))
		}
		if got := math.Float32bits(absMax(x)); got != want {
			t.Fatalf("n %d: absMax bits %#x, Go twin %#x", n, got, want)
		}
		// Dequantize with and without ReLU.
		acc := make([]int32, n)
		for i := range acc {
			acc[i] = int32(rng.Uint32()) >> uint(rng.IntN(31))
		}
		for _, relu := range []bool{false, true} {
			out := make([]float32, n)
			dequantBiasRow(out, acc, 0.001, -0.5, relu)
			for i, a := range acc {
				f := float32(float32(a)*0.001) - 0.5
				if relu && !(f > 0) {
					f = 0 // the definition, branching
				}
				if math.Float32bits(out[i]) != math.Float32bits(f) {
					t.Fatalf("n %d relu %v: dequant(%d) = %g, Go twin %g", n, relu, a, out[i], f)
				}
			}
		}
	}
	// relu32 against the definition on special values.
	for _, f := range append(special, float32(math.Float32frombits(0xffc00001)), 1e-45, -1e-45, 3.4e38) {
		want := f
		if !(f > 0) {
			want = 0
		}
		if math.Float32bits(relu32(f)) != math.Float32bits(want) {
			t.Fatalf("relu32(%g) = %g, want %g", f, relu32(f), want)
		}
	}
	// NaN through the ReLU epilogue: +0, as in the Go twin.
	out := make([]float32, 8)
	dequantBiasRow(out, make([]int32, 8), float32(math.NaN()), 0, true)
	for _, v := range out {
		if math.Float32bits(v) != 0 {
			t.Fatalf("ReLU of NaN = %g (bits %#x), want +0", v, math.Float32bits(v))
		}
	}
}

// TestEvenBytes checks the stride-2 gather of the int8 im2col against the
// plain loop at every length up to 40 and every source slack.
func TestEvenBytes(t *testing.T) {
	src := make([]int8, 100)
	for i := range src {
		src[i] = int8(i*37 - 100)
	}
	for n := range 41 {
		for extra := range 3 {
			s := src[:max(0, 2*n-1+extra)]
			o := make([]int8, n)
			evenBytes(o, s)
			for i := range o {
				if o[i] != s[2*i] {
					t.Fatalf("evenBytes n=%d len(src)=%d: o[%d] = %d, want %d", n, len(s), i, o[i], s[2*i])
				}
			}
		}
	}
}

// TestSplitRow checks the stride-2 phase split against the plain loop at
// every length up to 40.
func TestSplitRow(t *testing.T) {
	src := make([]int8, 80)
	for i := range src {
		src[i] = int8(i*53 - 90)
	}
	for n := range 41 {
		e, o := make([]int8, n), make([]int8, n)
		splitRow(e, o, src[:2*n])
		for j := range n {
			if e[j] != src[2*j] || o[j] != src[2*j+1] {
				t.Fatalf("splitRow n=%d: e[%d], o[%d] = %d, %d; want %d, %d", n, j, j, e[j], o[j], src[2*j], src[2*j+1])
			}
		}
	}
}
