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

// TestAttention compares the fused attention forward (out, lse) and
// backward (dq, dk, dv) with the cpu's for every dtype, causal and not,
// with sequence lengths that are not multiples of the kernels' tiles (32
// rows for these small D: T=37 and T=70 end on a partial tile, T=5 and 17
// are one) and a head dimension that shrinks the tile (D=200: 8 rows, so
// T=9 is two tiles).
func TestAttention(t *testing.T) {
	g := newRig(t)
	const b, h = 2, 2
	cases := [][2]int{{5, 8}, {17, 16}, {37, 8}, {70, 4}, {9, 200}}
	for _, dt := range floatDTypes() {
		for _, c := range cases {
			for _, causal := range []bool{false, true} {
				tt, d := c[0], c[1]
				t.Run(fmt.Sprintf("%s/T=%d/D=%d/causal=%v", dt, tt, d, causal), func(t *testing.T) {
					g.t = t
					attentionCase(g, dt, b, h, tt, d, causal)
				})
			}
		}
	}
}

func attentionCase(g *rig, dt dtype.DType, b, h, t, d int, causal bool) {
	scale := 1 / math.Sqrt(float64(d))
	q, k, v := g.rand(dt, b, h, t, d), g.rand(dt, b, h, t, d), g.rand(dt, b, h, t, d)
	out, lse := g.rand(dt, b, h, t, d), g.rand(computeOf(dt), b, h, t)
	g.both(func(kk device.Kernels, o func(twin) device.Operand) {
		kk.Attention(o(out), o(lse), o(q), o(k), o(v), b, h, t, d, scale, causal)
	})
	tol := rowTol(dt)
	g.checkNorm("Attention out", out, tol)
	g.check("Attention lse", lse, rowTol(computeOf(dt)))
	dout := g.rand(dt, b, h, t, d)
	dq, dk, dv := g.rand(dt, b, h, t, d), g.rand(dt, b, h, t, d), g.rand(dt, b, h, t, d)
	// Each device differentiates its own forward (out and lse compared above).
	g.both(func(kk device.Kernels, o func(twin) device.Operand) {
		kk.AttentionGrad(o(dq), o(dk), o(dv), o(dout), o(q), o(k), o(v), o(out), o(lse), b, h, t, d, scale, causal)
	})
	g.checkNorm("AttentionGrad dq", dq, 4*tol)
	g.checkNorm("AttentionGrad dk", dk, 4*tol)
	g.checkNorm("AttentionGrad dv", dv, 4*tol)
}

// TestRowOpsBadInput: operands of the wrong dtypes raise a
// *device.KernelError naming the op and what it wanted, before anything is
// queued.
func TestRowOpsBadInput(t *testing.T) {
	g := newRig(t)
	q, l16 := g.rand(dtype.F16, 1, 1, 2, 4), g.rand(dtype.F16, 1, 1, 2)
	x32, x64, i32, r32 := g.rand(dtype.F32, 2, 3), g.rand(dtype.F64, 2, 3), g.rand(dtype.I32, 2), g.rand(dtype.F32, 2)
	k := g.p.gpu.Kernels()
	cases := []struct {
		name, want string
		call       func()
	}{
		{"Attention", "lse of dtype f16 for f16 inputs: want f32", func() {
			k.Attention(q.gpu, l16.gpu, q.gpu, q.gpu, q.gpu, 1, 1, 2, 4, 0.5, true)
		}},
		{"Softmax", "operands of dtypes f32 and f64", func() { k.Softmax(x32.gpu, x64.gpu, 2, 3, false) }},
		{"CrossEntropy", "index operand of dtype f32", func() {
			k.CrossEntropy(r32.gpu, r32.gpu, x32.gpu, r32.gpu, 2, 3, -1, 0)
		}},
		{"IndexSelect", "from f64 into f32", func() { k.IndexSelect(x32.gpu, x64.gpu, i32.gpu, 1, 2, 3) }},
	}
	for _, c := range cases {
		err := catch(c.call)
		var ke *device.KernelError
		if !errors.As(err, &ke) || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with bad operands raised %v, want a *device.KernelError naming %s and saying %q", c.name, err, c.name, c.want)
		}
	}
}
