package cpu_test

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestHalfTransformerKernelsHeapIsBounded: BF16 attention forward and
// backward, LayerNorm's gradient, a bias-gradient sum and a GEMM into a
// BF16 C, on 2^17-element operands, allocate no float32 copy of a whole
// operand (the widening path took 4 bytes per element of each: 4 MiB for
// attention's backward alone): less Go heap per round, after the first
// (which fills the per-worker scratch), than one operand's float32 copy
// (512 KiB; what remains is the GEMMs' own bookkeeping); with the 16-bit
// kernels off, the same round allocates over 4 MiB.
func TestHalfTransformerKernelsHeapIsBounded(t *testing.T) {
	d := cpu.New(0, device.Options{})
	k := d.Kernels()
	h := halfRig{d, rand.New(rand.NewPCG(8, 8))}
	const b, nh, tt, hd = 2, 4, 256, 64
	const rows, cols = b * tt, nh * hd
	bf := func(shape ...int) device.Operand { return h.operand(dtype.BF16, shape...) }
	f32 := func(n int) device.Operand { return h.operand(dtype.F32, n) }
	q, kk, v, out, dout, dq, dk, dv := bf(b, nh, tt, hd), bf(b, nh, tt, hd), bf(b, nh, tt, hd), bf(b, nh, tt, hd),
		bf(b, nh, tt, hd), bf(b, nh, tt, hd), bf(b, nh, tt, hd), bf(b, nh, tt, hd)
	lse := f32(b * nh * tt)
	x, dy, dx := bf(rows, cols), bf(rows, cols), bf(rows, cols)
	w, dw, db, mean, rstd := f32(cols), f32(cols), f32(cols), f32(rows), f32(rows)
	sum := f32(cols)
	sum.Shape = []int{1, cols}
	wm := bf(cols, cols)
	round := func() {
		k.Attention(out, lse, q, kk, v, b, nh, tt, hd, 0.125, true)
		k.AttentionGrad(dq, dk, dv, dout, q, kk, v, out, lse, b, nh, tt, hd, 0.125, true)
		k.LayerNormGrad(dx, dw, db, dy, x, w, mean, rstd, rows, cols)
		k.Reduce(device.Sum, sum, dy, 0)
		k.Gemm(device.Gemm{A: x, B: wm, C: dx, M: rows, N: cols, K: cols, Alpha: 1, LdA: cols, LdB: cols, LdC: cols})
	}
	got := heapPerRun(5, round)
	restore := cpu.SetInRegister(false)
	wide := heapPerRun(1, round)
	restore()
	t.Logf("Go heap per round: %.0f bytes with the 16-bit kernels, %.0f widening whole", got, wide)
	if one := float64(4 * rows * cols); got >= one {
		t.Errorf("%.0f bytes of Go heap per round, want < %.0f (one operand widened)", got, one)
	}
	if wide < 4<<20 {
		t.Errorf("widening whole: %.0f bytes per round, want over 4 MiB (does the test reach the widening path?)", wide)
	}
}
