package cuda

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// poolCase is one window geometry of the pooling tests; ceil adds the
// extra output row and column of PyTorch's ceil_mode where it applies.
type poolCase struct {
	name                                       string
	n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw int
	ceil                                       bool
}

var poolCases = []poolCase{
	{"2x2s2", 2, 3, 6, 6, 2, 2, 2, 2, 0, 0, 1, 1, false},
	{"3x3s2p1", 1, 2, 7, 5, 3, 3, 2, 2, 1, 1, 1, 1, false},
	{"2x3s1x2p1x0", 1, 2, 5, 7, 2, 3, 1, 2, 1, 0, 1, 1, false},
	{"dil2", 2, 1, 7, 8, 2, 3, 1, 2, 1, 1, 2, 2, false},
	{"ceil", 1, 2, 5, 7, 2, 3, 2, 2, 0, 1, 1, 1, true},
	{"ceil-dil", 1, 1, 8, 6, 3, 2, 3, 2, 1, 0, 2, 1, true},
	{"pad-only-windows", 1, 2, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1, false},
	{"dil-steps-over", 1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 3, 3, false},
}

// pool fills the device.Pool2d of c.
func (c poolCase) pool(countPad bool) device.Pool2d {
	p := device.Pool2d{N: c.n, C: c.c, H: c.h, W: c.w, KH: c.kh, KW: c.kw, SH: c.sh, SW: c.sw,
		PH: c.ph, PW: c.pw, DH: c.dh, DW: c.dw, CountPad: countPad}
	p.OutSize()
	if c.ceil {
		// PyTorch's ceil mode: the size rounded up, less the last output
		// when its window would start in the right padding.
		p.OH, p.OW = ceilOut(p.H, p.KH, p.SH, p.PH, p.DH), ceilOut(p.W, p.KW, p.SW, p.PW, p.DW)
	}
	return p
}

// ceilOut is PyTorch's output size in ceil mode along one axis.
func ceilOut(in, k, s, pad, d int) int {
	span := in + 2*pad - d*(k-1) - 1
	o := (span+s-1)/s + 1
	if (o-1)*s >= in+pad {
		o--
	}
	return o
}

// poolInput is x for the pooling tests: random, or (ties) small integers
// so that windows hold equal maxima, with a NaN in some windows.
func (g *rig) poolInput(dt dtype.DType, n int, ties bool) []float64 {
	v := g.uniform(n, -2, 2)
	if ties {
		for i := range v {
			v[i] = math.Round(v[i])
		}
		if n > 5 {
			v[5] = math.NaN()
		}
	}
	return v
}

func TestMaxPool2d(t *testing.T) {
	g := newRig(t)
	for _, dt := range floatDTypes() {
		for _, c := range poolCases {
			for _, ties := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/ties=%v", dt, c.name, ties), func(t *testing.T) {
					g.t = t
					p := c.pool(false)
					if p.OH <= 0 || p.OW <= 0 {
						t.Fatalf("case %s: output %d×%d", c.name, p.OH, p.OW)
					}
					x := g.of(dt, g.poolInput(dt, c.n*c.c*c.h*c.w, ties), c.n, c.c, c.h, c.w)
					y := g.rand(dt, c.n, c.c, p.OH, p.OW)
					g.both(func(k device.Kernels, o func(twin) device.Operand) { k.MaxPool2d(p, o(y), o(x)) })
					g.check("MaxPool2d y", y, 0)
					// dx starts as garbage: it is overwritten.
					dy, dx := g.rand(dt, c.n, c.c, p.OH, p.OW), g.rand(dt, c.n, c.c, c.h, c.w)
					g.both(func(k device.Kernels, o func(twin) device.Operand) { k.MaxPool2dGrad(p, o(dx), o(dy), o(x)) })
					g.check("MaxPool2dGrad dx", dx, 0)
				})
			}
		}
	}
}

func TestAvgPool2d(t *testing.T) {
	g := newRig(t)
	for _, dt := range floatDTypes() {
		for _, c := range poolCases {
			for _, countPad := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/countPad=%v", dt, c.name, countPad), func(t *testing.T) {
					g.t = t
					p := c.pool(countPad)
					x, y := g.rand(dt, c.n, c.c, c.h, c.w), g.rand(dt, c.n, c.c, p.OH, p.OW)
					g.both(func(k device.Kernels, o func(twin) device.Operand) { k.AvgPool2d(p, o(y), o(x)) })
					g.check("AvgPool2d y", y, 0)
					dy, dx := g.rand(dt, c.n, c.c, p.OH, p.OW), g.rand(dt, c.n, c.c, c.h, c.w)
					g.both(func(k device.Kernels, o func(twin) device.Operand) { k.AvgPool2dGrad(p, o(dx), o(dy)) })
					g.check("AvgPool2dGrad dx", dx, 0)
				})
			}
		}
	}
}

func TestAdaptiveAvgPool2d(t *testing.T) {
	g := newRig(t)
	for _, dt := range floatDTypes() {
		for _, s := range [][4]int{{4, 4, 2, 2}, {5, 7, 3, 4}, {3, 3, 5, 6}, {6, 5, 1, 1}, {7, 3, 7, 3}, {2, 9, 4, 2}} {
			h, w, oh, ow := s[0], s[1], s[2], s[3]
			t.Run(fmt.Sprintf("%s/%dx%d->%dx%d", dt, h, w, oh, ow), func(t *testing.T) {
				g.t = t
				n, c := 2, 3
				x, y := g.rand(dt, n, c, h, w), g.rand(dt, n, c, oh, ow)
				g.both(func(k device.Kernels, o func(twin) device.Operand) {
					k.AdaptiveAvgPool2d(o(y), o(x), n, c, h, w, oh, ow)
				})
				g.check("AdaptiveAvgPool2d y", y, 0)
				dy, dx := g.rand(dt, n, c, oh, ow), g.rand(dt, n, c, h, w)
				g.both(func(k device.Kernels, o func(twin) device.Operand) {
					k.AdaptiveAvgPool2dGrad(o(dx), o(dy), n, c, h, w, oh, ow)
				})
				g.check("AdaptiveAvgPool2dGrad dx", dx, 0)
			})
		}
	}
}

// TestPoolBadInput: mismatched dtypes, wrong lengths and bad windows raise
// a *device.KernelError naming the op.
func TestPoolBadInput(t *testing.T) {
	g := newRig(t)
	p := device.Pool2d{N: 1, C: 1, H: 4, W: 4, KH: 2, KW: 2, SH: 2, SW: 2, DH: 1, DW: 1}
	p.OutSize()
	x32, y32, y64 := g.rand(dtype.F32, 1, 1, 4, 4), g.rand(dtype.F32, 1, 1, 2, 2), g.rand(dtype.F64, 1, 1, 2, 2)
	short := g.rand(dtype.F32, 1, 1, 2, 1)
	zero := p
	zero.SH = 0
	k := g.p.gpu.Kernels()
	cases := []struct {
		name, want string
		call       func()
	}{
		{"MaxPool2d", "dtypes f32 and f64", func() { k.MaxPool2d(p, y64.gpu, x32.gpu) }},
		{"MaxPool2dGrad", "want N·C·OH·OW = 4", func() { k.MaxPool2dGrad(p, x32.gpu, short.gpu, x32.gpu) }},
		{"AvgPool2d", "stride 0×2", func() { k.AvgPool2d(zero, y32.gpu, x32.gpu) }},
		{"AvgPool2dGrad", "want N·C·H·W = 16", func() { k.AvgPool2dGrad(p, y32.gpu, y32.gpu) }},
		{"AdaptiveAvgPool2d", "want N·C·OH·OW = 9", func() { k.AdaptiveAvgPool2d(y32.gpu, x32.gpu, 1, 1, 4, 4, 3, 3) }},
		{"AdaptiveAvgPool2dGrad", "dtypes f32 and f64", func() { k.AdaptiveAvgPool2dGrad(x32.gpu, y64.gpu, 1, 1, 4, 4, 2, 2) }},
	}
	for _, c := range cases {
		err := catch(c.call)
		var ke *device.KernelError
		if !errors.As(err, &ke) || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with bad operands raised %v, want a *device.KernelError naming %s and saying %q", c.name, err, c.name, c.want)
		}
	}
}

func TestPoolCeilSizes(t *testing.T) {
	for _, c := range poolCases {
		if c.ceil {
			f, p := c, c
			f.ceil = false
			if a, b := f.pool(false), p.pool(false); a.OH == b.OH && a.OW == b.OW {
				t.Errorf("case %s: ceil mode gives the floor sizes %d×%d", c.name, a.OH, a.OW)
			}
		}
	}
}
