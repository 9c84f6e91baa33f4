// Until h1's launch API (kern, Arg, launch, Open) is merged, this file
// builds only with -tags cudakernels (zz_stub_test.go stands in).

//go:build cudakernels

package cuda

import (
	"fmt"
	"math"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// TestAttention compares the fused attention forward (out, lse) and
// backward (dq, dk, dv) with the cpu's for every dtype, causal and not,
// with sequence lengths that are not multiples of the kernels' tiles and
// head dimensions that make the tile shrink.
func TestAttention(t *testing.T) {
	g := newRig(t)
	const b, h = 2, 2
	cases := [][2]int{{5, 8}, {17, 16}, {37, 8}, {9, 200}}
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
