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

// convCases are small convolutions (the emulator is slow): plain, padded,
// strided, dilated, grouped, depthwise, pointwise (no workspace), strided
// 1×1 (workspace), a stride that skips input rows, and a rectangular mix.
func convCases() []device.Conv2d {
	mk := func(n, c, h, w, k, r, s, st, pad, dil, g int) device.Conv2d {
		p := device.Conv2d{N: n, C: c, H: h, W: w, K: k, R: r, S: s, StrideH: st, StrideW: st,
			PadH: pad, PadW: pad, DilH: dil, DilW: dil, Groups: g}
		p.OutSize()
		return p
	}
	rect := mk(2, 3, 6, 5, 4, 3, 2, 1, 0, 1, 1)
	rect.StrideW, rect.PadH, rect.DilW = 2, 1, 2
	rect.OutSize()
	return []device.Conv2d{
		mk(2, 3, 5, 5, 4, 3, 3, 1, 0, 1, 1),
		mk(2, 3, 5, 6, 4, 3, 3, 1, 1, 1, 1),
		mk(2, 2, 7, 7, 3, 3, 3, 2, 1, 1, 1),
		mk(1, 2, 7, 6, 2, 3, 3, 1, 2, 2, 1),
		mk(2, 4, 5, 5, 6, 3, 3, 1, 1, 1, 2),
		mk(2, 3, 5, 5, 6, 3, 3, 1, 1, 1, 3),
		mk(2, 4, 4, 5, 3, 1, 1, 1, 0, 1, 1),
		mk(2, 4, 4, 4, 6, 1, 1, 1, 0, 1, 2),
		mk(2, 3, 5, 5, 2, 1, 1, 2, 0, 1, 1),
		mk(1, 2, 8, 8, 2, 2, 2, 3, 0, 1, 1),
		rect,
	}
}

// convTol is the tolerance (relative to the output's largest magnitude)
// of a convolution in dt. 16-bit results are rounded once from F32 on both
// devices (with the F32 workspace autograd passes, the gradients too: see
// TestConv2dGrad16RoundsOnce), so a few units in the dtype's last place
// cover a rounding that falls differently; the 16-bit workspace of
// TestConv2dWorkspace, which rounds in the dtype, stays within them on its
// small shapes.
func convTol(dt dtype.DType) float64 {
	switch dt {
	case dtype.F64:
		return 1e-12
	case dtype.F32:
		return 2e-6
	case dtype.F16:
		return 2e-3
	}
	return 1.6e-2
}

func TestConv2d(t *testing.T) {
	g := newRig(t)
	for _, dt := range floatDTypes() {
		for i, p := range convCases() {
			t.Run(fmt.Sprintf("%s/%d/n%d_c%d_%dx%d_k%d_%dx%d_s%dx%d_p%dx%d_d%dx%d_g%d", dt, i, p.N, p.C, p.H, p.W, p.K, p.R, p.S,
				p.StrideH, p.StrideW, p.PadH, p.PadW, p.DilH, p.DilW, p.Groups), func(t *testing.T) {
				g.t = t
				convCase(g, dt, p)
			})
		}
	}
}

func convCase(g *rig, dt dtype.DType, p device.Conv2d) {
	wdt := dt
	if dt == dtype.F16 || dt == dtype.BF16 {
		wdt = dtype.F32 // autograd's workspace has the compute dtype
	}
	ws := nilTwin(wdt)
	if n := p.Workspace(); n > 0 {
		ws = g.rand(wdt, n)
	}
	ws = g.cpuConvWS(p, dt, ws)
	x, w := g.rand(dt, p.N, p.C, p.H, p.W), g.rand(dt, p.K, p.C/p.Groups, p.R, p.S)
	y := g.rand(dt, p.N, p.K, p.OH, p.OW)
	g.both(func(k device.Kernels, o func(twin) device.Operand) { k.Conv2d(p, o(y), o(x), o(w), o(ws)) })
	g.checkNorm("Conv2d y", y, convTol(dt))
	// dx and dw start as garbage: both are overwritten.
	dy, dx, dw := g.rand(dt, p.N, p.K, p.OH, p.OW), g.rand(dt, p.N, p.C, p.H, p.W), g.rand(dt, p.K, p.C/p.Groups, p.R, p.S)
	g.both(func(k device.Kernels, o func(twin) device.Operand) {
		k.Conv2dGradInput(p, o(dx), o(dy), o(w), o(ws))
		k.Conv2dGradWeight(p, o(dw), o(dy), o(x), o(ws))
	})
	g.checkNorm("Conv2dGradInput dx", dx, convTol(dt))
	g.checkNorm("Conv2dGradWeight dw", dw, convTol(dt))
}

// cpuConvWS returns ws with its cpu side replaced by a workspace of the
// cpu kernels' own size for p's three kernels over operands of dtype dt:
// the cpu is the reference here, and the workspaces these tests vary are
// the cuda kernels' (the cpu kernels refuse a shorter one).
func (g *rig) cpuConvWS(p device.Conv2d, dt dtype.DType, ws twin) twin {
	cdt := dtype.F32
	if dt == dtype.F64 {
		cdt = dtype.F64
	}
	n := max(p.ForwardWorkspace(dt), p.GradInputWorkspace(dt), p.GradWeightWorkspace(dt))
	ws.cpu = g.rand(cdt, n).cpu
	return ws
}

// TestConv2dBadOperands: a mixed dtype, a short workspace and a wrong
// length raise *device.KernelError.
func TestConv2dBadOperands(t *testing.T) {
	p := devices(t)
	c := device.Conv2d{N: 1, C: 1, H: 3, W: 3, K: 1, R: 2, S: 2, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1, Groups: 1}
	c.OutSize()
	x := p.put(t, dense(dtype.F32, 1, 1, 3, 3), nil)
	w := p.put(t, dense(dtype.F32, 1, 1, 2, 2), nil)
	y := p.put(t, dense(dtype.F32, 1, 1, 2, 2), nil)
	w64 := p.put(t, dense(dtype.F64, 1, 1, 2, 2), nil)
	short := p.put(t, dense(dtype.F32, 3), nil)
	ws := p.put(t, dense(dtype.F32, c.Workspace()), nil)
	k := p.gpu.Kernels()
	cases := []struct {
		name, want string
		call       func()
	}{
		{"dtypes", "dtype", func() { k.Conv2d(c, y.gpu, x.gpu, w64.gpu, ws.gpu) }},
		{"workspace", "workspace", func() { k.Conv2d(c, y.gpu, x.gpu, w.gpu, short.gpu) }},
		{"length", "want 9 elements", func() { k.Conv2dGradInput(c, y.gpu, y.gpu, w.gpu, ws.gpu) }},
	}
	for _, tc := range cases {
		err := catch(tc.call)
		var ke *device.KernelError
		if !errors.As(err, &ke) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: raised %v, want a *device.KernelError saying %q", tc.name, err, tc.want)
		}
	}
}

// TestConv2dWorkspace: a workspace at an offset into a larger block, of
// the operands' own 16-bit dtype or of F32, gives the same results (a
// 16-bit one at an odd offset with room for dw's F32 sum puts it at the
// next 4-byte boundary, clear of the im2col matrix); and the gradients
// repeat bit for bit (no atomics).
func TestConv2dWorkspace(t *testing.T) {
	g := newRig(t)
	p := device.Conv2d{N: 2, C: 2, H: 5, W: 5, K: 3, R: 3, S: 3, StrideH: 2, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 1}
	p.OutSize()
	for _, c := range []struct {
		dt, wdt dtype.DType
		room    int // the workspace's length in Workspace()s
	}{{dtype.F16, dtype.F16, 1}, {dtype.F16, dtype.F16, 2}, {dtype.BF16, dtype.F32, 1}, {dtype.F32, dtype.F32, 1}} {
		t.Run(fmt.Sprintf("%s/ws=%s×%d", c.dt, c.wdt, c.room), func(t *testing.T) {
			g.t = t
			n := p.Workspace() * c.room
			ws := g.p.put(t, opnd{dt: c.wdt, n: n + 3, off: 3, shape: []int{n}}, values(g.r, c.wdt, n+3, false))
			ws = g.cpuConvWS(p, c.dt, ws)
			x, w := g.rand(c.dt, p.N, p.C, p.H, p.W), g.rand(c.dt, p.K, p.C, p.R, p.S)
			y, dy := g.rand(c.dt, p.N, p.K, p.OH, p.OW), g.rand(c.dt, p.N, p.K, p.OH, p.OW)
			dx, dw := g.rand(c.dt, p.N, p.C, p.H, p.W), g.rand(c.dt, p.K, p.C, p.R, p.S)
			g.both(func(k device.Kernels, o func(twin) device.Operand) {
				k.Conv2d(p, o(y), o(x), o(w), o(ws))
				k.Conv2dGradInput(p, o(dx), o(dy), o(w), o(ws))
				k.Conv2dGradWeight(p, o(dw), o(dy), o(x), o(ws))
			})
			g.checkNorm("Conv2d y", y, convTol(c.dt))
			g.checkNorm("Conv2dGradInput dx", dx, convTol(c.dt))
			g.checkNorm("Conv2dGradWeight dw", dw, convTol(c.dt))
			_, dx1 := g.p.read(dx)
			_, dw1 := g.p.read(dw)
			k := g.p.gpu.Kernels()
			k.Conv2dGradInput(p, dx.gpu, dy.gpu, w.gpu, ws.gpu)
			k.Conv2dGradWeight(p, dw.gpu, dy.gpu, x.gpu, ws.gpu)
			_, dx2 := g.p.read(dx)
			_, dw2 := g.p.read(dw)
			exact(t, "Conv2dGradInput dx again", c.dt, dx1, dx2)
			exact(t, "Conv2dGradWeight dw again", c.dt, dw1, dw2)
		})
	}
}

// TestConv2dGrad16RoundsOnce: 16-bit gradients over many samples, with
// the F32 workspace autograd passes, keep F32 until the one rounding to
// the dtype, as the cpu does: dw sums the samples in F32 and dx sums its
// col elements from an F32 col, every element within one unit in the last
// place of the cpu's (the two F32 sums differ in order only). The cases
// fit all of dw[g] in the accumulator (Kg ≤ OH·OW/2) or take it in blocks
// of rows (grouped, the last block short); the pointwise ones have no
// im2col matrix and the whole workspace (GradWeightWorkspace) is the
// accumulator, in blocks when it is 16-bit (half the bytes). A 16-bit
// workspace of the others, or none for a pointwise one, leaves no room
// for F32: that path rounds in the dtype, and its error is logged beside
// the F32 one.
func TestConv2dGrad16RoundsOnce(t *testing.T) {
	g := newRig(t)
	mk := func(n, c, h, k, r, st, pad, groups int) device.Conv2d {
		p := device.Conv2d{N: n, C: c, H: h, W: h, K: k, R: r, S: r, StrideH: st, StrideW: st,
			PadH: pad, PadW: pad, DilH: 1, DilW: 1, Groups: groups}
		p.OutSize()
		return p
	}
	cases := []device.Conv2d{mk(16, 4, 6, 3, 3, 1, 1, 1), mk(12, 4, 4, 6, 3, 2, 1, 2), // one block, blocks
		mk(16, 5, 4, 3, 1, 1, 0, 1), mk(12, 6, 4, 10, 1, 1, 0, 2)} // pointwise, grouped pointwise
	for _, p := range cases {
		for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
			t.Run(fmt.Sprintf("%s/n%d_k%d_%dx%d_g%d_ohw%d", dt, p.N, p.K, p.R, p.S, p.Groups, p.OH*p.OW), func(t *testing.T) {
				g.t = t
				grad16Case(g, p, dt)
			})
		}
	}
}

// grad16Case runs TestConv2dGrad16RoundsOnce's workspaces on p in dt.
func grad16Case(g *rig, p device.Conv2d, dt dtype.DType) {
	ulp := math.Ldexp(1, -7) // bf16: 8 significant bits
	if dt == dtype.F16 {
		ulp = math.Ldexp(1, -10)
	}
	type variant struct {
		name   string
		ws     twin
		strict bool // summed in F32: within 1 unit of the cpu's
	}
	n := p.GradWeightWorkspace(dt)
	vs := []variant{{"F32", g.rand(dtype.F32, n), true}, {dt.String(), g.rand(dt, n), p.Pointwise()}}
	if p.Pointwise() {
		vs[1].name = dt.String() + " (F32 in blocks)"
		vs = append(vs, variant{"none", nilTwin(dtype.F32), false})
	}
	x, w, dy := g.rand(dt, p.N, p.C, p.H, p.W), g.rand(dt, p.K, p.C/p.Groups, p.R, p.S), g.rand(dt, p.N, p.K, p.OH, p.OW)
	for _, v := range vs {
		v.ws = g.cpuConvWS(p, dt, v.ws)
		dw, dx := g.rand(dt, p.K, p.C/p.Groups, p.R, p.S), g.rand(dt, p.N, p.C, p.H, p.W)
		g.both(func(k device.Kernels, o func(twin) device.Operand) {
			k.Conv2dGradWeight(p, o(dw), o(dy), o(x), o(v.ws))
			k.Conv2dGradInput(p, o(dx), o(dy), o(w), o(v.ws))
		})
		for _, r := range []struct {
			what string
			got  twin
		}{{"dw", dw}, {"dx", dx}} {
			want, got := g.floats(r.got)
			worst := worstULPs(want, got, ulp)
			g.t.Logf("%s with workspace %s: largest error %.2f units in the last place", r.what, v.name, worst)
			if v.strict && worst > 1 {
				g.t.Errorf("%s with workspace %s (summed in F32) is %.2f units in the last place from the cpu's, want ≤ 1", r.what, v.name, worst)
			}
		}
	}
}

// worstULPs is the largest |got − want| in units of the last place of
// want's binade (ulp is the unit at 1). Elements below 2^-10 of want's
// largest magnitude count against the unit at that magnitude: both
// devices sum in F32, in different orders, and an element whose terms
// cancel keeps their F32 rounding, which is relative to the terms, not to
// what is left (an F16 dw element of 9.8e-5 beside a largest of 19 was 4
// of its units apart, 2^-26 of the largest).
func worstULPs(want, got []float64, ulp float64) float64 {
	floor := 0.0
	for _, w := range want {
		floor = max(floor, math.Abs(w)/1024)
	}
	worst := 0.0
	for i, w := range want {
		unit := ulp * math.Pow(2, math.Floor(math.Log2(max(math.Abs(w), floor, 1e-30))))
		worst = max(worst, math.Abs(got[i]-w)/unit)
	}
	return worst
}
