package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// TestConvPermLayout: the offsets conv_perm_amd64.s reads convPerm at are
// its fields'.
func TestConvPermLayout(t *testing.T) {
	var p convPerm
	got := [3]uintptr{unsafe.Offsetof(p.valid), unsafe.Offsetof(p.load), unsafe.Offsetof(p.store)}
	if want := [3]uintptr{convPermValid, convPermLoad, convPermStore}; got != want {
		t.Fatalf("offsets %v, want %v", got, want)
	}
	if n := unsafe.Sizeof(p); n != 1256 { // the size doc.go states
		t.Fatalf("convPerm is %d bytes, want 1256", n)
	}
}

// convPermShapes are small convolutions over every kind of plane the
// permutation path takes: odd and even sizes up to 64 inputs and
// outputs, strides 1 and 2, padding 0 to 2, dilation, 1×1, 2×3 and 3×3
// kernels.
func convPermShapes() []ConvArgs {
	var ps []ConvArgs
	for _, hw := range [][2]int{{1, 1}, {3, 5}, {4, 4}, {5, 3}, {7, 7}, {8, 8}, {2, 9}} {
		for _, k := range [][2]int{{1, 1}, {3, 3}, {2, 3}} {
			for _, st := range []int{1, 2} {
				for pad := range 3 {
					for _, dil := range []int{1, 2} {
						p := ConvArgs{N: 3, C: 3, H: hw[0], W: hw[1], K: 2, R: k[0], S: k[1], StrideH: st, StrideW: st,
							PadH: pad, PadW: pad, DilH: dil, DilW: dil, Groups: 1}
						p.OH = (p.H+2*pad-dil*(p.R-1)-1)/st + 1
						p.OW = (p.W+2*pad-dil*(p.S-1)-1)/st + 1
						if p.OH > 0 && p.OW > 0 && p.OH*p.OW <= 64 {
							ps = append(ps, p)
						}
					}
				}
			}
		}
	}
	return ps
}

// TestConvPermMatchesIm2col: the permutation im2col — 16-bit (convPerm)
// and float32 (convUnperm built with gather), assembly and Go twin —
// writes the rows im2colSamples writes, bit for bit, for 1 to 3 samples
// side by side and row ranges that start and end inside a channel, with
// every 16-bit pattern among the 16-bit inputs and −0, ±Inf, NaN among the
// float ones; the columns after each row are left alone.
func TestConvPermMatchesIm2col(t *testing.T) {
	if !CPU.AVX512 {
		t.Skip("no AVX-512: the path is not taken")
	}
	r := rand.New(rand.NewPCG(16, 17))
	var tab convPerm
	var tabF convUnperm
	for _, p := range convPermShapes() {
		if !tab.build(&p) || !tabF.build(&p, true) {
			t.Fatalf("%+v: not built", p)
		}
		rs, hw, xs := p.R*p.S, p.H*p.W, p.C*p.H*p.W
		x := make([]uint16, p.N*xs)
		for i := range x {
			x[i] = uint16(r.Uint32())
		}
		checkPermIm2col(t, &p, x, map[string]func(col, x []uint16, ld, ns, r0, r1 int){
			"asm": func(col, x []uint16, ld, ns, r0, r1 int) { tab.im2col(col, x, ld, xs, ns, rs, r0, r1) },
			"go": func(col, x []uint16, ld, ns, r0, r1 int) {
				permRows(col, x, ld, xs, ns, rs, r0, r1, hw, tab.nbs, func(dst, x []uint16, t0, t1 int) {
					im2colPermGo(dst, ld, x, xs, ns, t0, t1, &tab)
				})
			},
		})
		xf := randomSpecials(r, p.N*xs)
		checkPermIm2col(t, &p, xf, map[string]func(col, x []float32, ld, ns, r0, r1 int){
			"asm": func(col, x []float32, ld, ns, r0, r1 int) { tabF.im2col(col, x, ld, xs, ns, rs, r0, r1) },
			"go": func(col, x []float32, ld, ns, r0, r1 int) {
				permRows(col, x, ld, xs, ns, rs, r0, r1, hw, tabF.nbs, func(dst, x []float32, t0, t1 int) {
					im2colPermFGo(dst, ld, x, xs, ns, t0, t1, &tabF)
				})
			},
		})
	}
}

// randomSpecials returns n normal floats, one in 16 of them −0, ±Inf or
// NaN instead.
func randomSpecials(r *rand.Rand, n int) []float32 {
	special := []float32{float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
		if r.IntN(16) == 0 {
			v[i] = special[r.IntN(len(special))]
		}
	}
	return v
}

// checkPermIm2col compares each of impls with im2colTile over p and x
// (TestConvPermMatchesIm2col), bit for bit.
func checkPermIm2col[T uint16 | float32](t *testing.T, p *ConvArgs, x []T, impls map[string]func(col, x []T, ld, ns, r0, r1 int)) {
	t.Helper()
	var taps convTaps
	taps.set(p)
	d := p.dims()
	rs := p.R * p.S
	bits := func(v T) uint32 {
		if f, ok := any(v).(float32); ok {
			return math.Float32bits(f)
		}
		return uint32(any(v).(uint16))
	}
	for ns := 1; ns <= p.N; ns++ {
		for _, rows := range [][2]int{{0, d.crs}, {min(1, d.crs-1), d.crs}, {0, max(1, d.crs-rs/2-1)}} {
			r0, r1 := rows[0], rows[1]
			ld := ns*d.ohw + 3 // a gap after each row, left alone
			want := make([]T, (r1-r0)*ld)
			for i := range want {
				want[i] = 7
			}
			for s := range ns {
				im2colTile(p, taps, want[s*d.ohw:], ld, x[s*d.xs:s*d.xs+d.cg*d.hw], r0, r1, 0, p.OH)
			}
			for name, impl := range impls {
				got := make([]T, len(want))
				for i := range got {
					got[i] = 7
				}
				impl(got, x, ld, ns, r0, r1)
				for i := range want {
					if bits(got[i]) != bits(want[i]) {
						t.Fatalf("%s %T %dx%d k%dx%d s%d p%d d%d ns %d rows [%d,%d): tile[%d] = %v, want %v (gap after %d per row)",
							name, x[0], p.H, p.W, p.R, p.S, p.StrideH, p.PadH, p.DilH, ns, r0, r1, i, got[i], want[i], ns*d.ohw)
					}
				}
			}
		}
	}
}

// TestConvUnpermLayout: the offsets conv_perm_amd64.s reads convUnperm
// at are its fields', and its size is the one doc.go states.
func TestConvUnpermLayout(t *testing.T) {
	var p convUnperm
	got := [4]uintptr{unsafe.Offsetof(p.hi), unsafe.Offsetof(p.valid), unsafe.Offsetof(p.load), unsafe.Offsetof(p.store)}
	if want := [4]uintptr{convUnpermHi, convUnpermValid, convUnpermLoad, convUnpermStore}; got != want {
		t.Fatalf("offsets %v, want %v", got, want)
	}
	if n := unsafe.Sizeof(p); n != 2480 {
		t.Fatalf("convUnperm is %d bytes, want 2480", n)
	}
}

// TestConvUnpermMatchesCol2im: the permutation col2im (assembly and its
// Go twin) writes the planes col2imTile adds into a cleared dx, bit for
// bit, over convPermShapes, with −0, infinities and NaNs among the tile's
// values and rows further apart than the tile's columns; the planes
// around the channels written are left alone.
func TestConvUnpermMatchesCol2im(t *testing.T) {
	if !CPU.AVX512 {
		t.Skip("no AVX-512: the path is not taken")
	}
	r := rand.New(rand.NewPCG(20, 21))
	var tab convUnperm
	for _, p := range convPermShapes() {
		if !tab.build(&p, false) {
			t.Fatalf("%+v: not built", p)
		}
		var taps convTaps
		taps.set(&p)
		d := p.dims()
		rs := p.R * p.S
		ld := d.ohw + 5
		col := randomSpecials(r, d.crs*ld)
		want := make([]float32, (p.C+1)*d.hw)
		col2imTile(&p, taps, want[:p.C*d.hw], slices.Clone(col), ld, d.crs, 0, p.OH)
		for _, impl := range []string{"asm", "go"} {
			got := make([]float32, len(want))
			for i := range got {
				got[i] = 7
			}
			for i := p.C * d.hw; i < len(want); i++ {
				want[i] = 7
			}
			if impl == "asm" {
				tab.col2im(got, col, ld, p.C, rs)
			} else {
				for c := range p.C {
					col2imPermGo(got[c*d.hw:], col[c*rs*ld:], ld, rs, &tab)
				}
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
					t.Fatalf("%s %dx%d k%dx%d s%d p%d d%d: dx[%d] = %v, want %v", impl, p.H, p.W, p.R, p.S, p.StrideH, p.PadH, p.DilH, i, got[i], want[i])
				}
			}
			for i := p.C * d.hw; i < len(got); i++ {
				if got[i] != 7 {
					t.Fatalf("%s: wrote past the planes at %d", impl, i)
				}
			}
		}
	}
}
