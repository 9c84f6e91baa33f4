package cpu_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// TestAttentionHalfMatchesWidened: attention and its gradient on BF16 and
// F16 operands, a head at a time in scratch, store the bytes of the path
// that widens every operand whole, causal or not (BF16 only where it does
// not take the pair kernel).
func TestAttentionHalfMatchesWidened(t *testing.T) {
	d := cpu.New(0, device.Options{})
	k := d.Kernels()
	h := halfRig{d, rand.New(rand.NewPCG(4, 4))}
	const b, nh, tt, hd = 2, 3, 70, 9
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
		if dt == dtype.BF16 && kernels.AttentionBF16Pairs() {
			t.Log("BF16 attention takes the VDPBF16PS pair kernel here: internal/kernels' TestAttentionBF16Pairs* check it")
			continue
		}
		op := func() device.Operand { return h.operand(dt, b, nh, tt, hd) }
		q, kk, v, out, dout, dq, dk, dv := op(), op(), op(), op(), op(), op(), op(), op()
		lse := h.operand(dtype.F32, b*nh*tt)
		for _, causal := range []bool{false, true} {
			twice(t, dt.String()+" attention", []device.Operand{out, lse, q, kk, v}, []int{0, 1}, func(o []device.Operand) {
				k.Attention(o[0], o[1], o[2], o[3], o[4], b, nh, tt, hd, 0.3, causal)
			})
			k.Attention(out, lse, q, kk, v, b, nh, tt, hd, 0.3, causal)
			twice(t, dt.String()+" attention grad", []device.Operand{dq, dk, dv, dout, q, kk, v, out, lse}, []int{0, 1, 2}, func(o []device.Operand) {
				k.AttentionGrad(o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], o[8], b, nh, tt, hd, 0.3, causal)
			})
		}
	}
}
