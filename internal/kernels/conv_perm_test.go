package kernels

import (
	"fmt"
	"math/rand/v2"
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

// TestConvPermMatchesIm2col: the permutation path (assembly and its Go
// twin) writes the rows im2colSamples writes, bit for bit, for 1 to 3
// samples side by side and row ranges that start and end inside a
// channel, with every 16-bit pattern among the inputs; the columns and
// rows around the tile are left alone.
func TestConvPermMatchesIm2col(t *testing.T) {
	if !CPU.AVX512 {
		t.Skip("no AVX-512: the path is not taken")
	}
	r := rand.New(rand.NewPCG(16, 17))
	var tab convPerm
	for _, p := range convPermShapes() {
		if !tab.build(&p) {
			t.Fatalf("%+v: not built", p)
		}
		var taps convTaps
		taps.set(&p)
		d := p.dims()
		x := make([]uint16, p.N*d.xs)
		for i := range x {
			x[i] = uint16(r.Uint32())
		}
		rs := p.R * p.S
		for ns := 1; ns <= p.N; ns++ {
			for _, rows := range [][2]int{{0, d.crs}, {min(1, d.crs-1), d.crs}, {0, max(1, d.crs-rs/2-1)}} {
				r0, r1 := rows[0], rows[1]
				ld := ns*d.ohw + 3 // a gap after each row, left alone
				want := make([]uint16, (r1-r0)*ld)
				im2colSamplesLd(&p, taps, &d, want, x, ns, ld, r0, r1)
				for _, impl := range []string{"asm", "go"} {
					got := make([]uint16, len(want))
					for i := range got {
						got[i] = 0xabcd
					}
					fill := func(dst []uint16) { // the gaps, as want has them
						for i := range r1 - r0 {
							copy(dst[i*ld+ns*d.ohw:(i+1)*ld], want[i*ld+ns*d.ohw:(i+1)*ld])
						}
					}
					if impl == "asm" {
						tab.im2col(got, x, ld, d.xs, ns, rs, r0, r1)
					} else {
						for row := r0; row < r1; {
							c, t0 := row/rs, row%rs
							t1 := min(rs, t0+r1-row)
							im2colPermGo(got[(row-r0)*ld:], ld, x[c*d.hw:], d.xs, ns, t0, t1, &tab)
							row += t1 - t0
						}
					}
					name := fmt.Sprintf("%s %dx%d k%dx%d s%d p%d d%d ns %d rows [%d,%d)", impl, p.H, p.W, p.R, p.S, p.StrideH, p.PadH, p.DilH, ns, r0, r1)
					for i := range r1 - r0 {
						for c := ns * d.ohw; c < ld; c++ {
							if got[i*ld+c] != 0xabcd {
								t.Fatalf("%s: wrote past the tile at row %d column %d", name, i, c)
							}
						}
					}
					fill(got)
					if j := firstDiff16(got, want); j >= 0 {
						t.Fatalf("%s: tile[%d] = %#04x, want %#04x", name, j, got[j], want[j])
					}
				}
			}
		}
	}
}

// im2colSamplesLd is im2colSamples with rows ld elements apart (ld ≥
// ns·OH·OW), over the whole plane as one band: the reference.
func im2colSamplesLd(p *ConvArgs, taps convTaps, d *convDims, col, x []uint16, ns, ld, r0, r1 int) {
	nb := d.ohw
	for s := range ns {
		im2colTile(p, taps, col[s*nb:], ld, x[s*d.xs:s*d.xs+d.cg*d.hw], r0, r1, 0, p.OH)
	}
}
