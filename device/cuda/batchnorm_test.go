package cuda

import (
	"errors"
	"fmt"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// TestBatchNorm runs BatchNorm and BatchNormGrad on the cpu device and the
// emulated cuda device with the same operands, in training and in eval,
// with and without the affine operands and the running statistics.
func TestBatchNorm(t *testing.T) {
	g := newRig(t)
	for _, dt := range floatDTypes() {
		for _, sh := range [][3]int{{2, 3, 5}, {4, 2, 1}, {3, 4, 70}, {1, 2, 2}, {3, 2, 100}, {1, 2, 1}} {
			for _, affine := range []string{"wb", "w", "none"} {
				for _, training := range []bool{true, false} {
					t.Run(fmt.Sprintf("%s/%dx%dx%d/%s/train=%v", dt, sh[0], sh[1], sh[2], affine, training), func(t *testing.T) {
						g.t = t
						batchNormCase(g, dt, dt, sh[0], sh[1], sh[2], affine, training, true)
					})
				}
			}
		}
	}
	// Per-channel operands of another float dtype (autocast's F32 weights
	// and statistics with BF16 activations), and untracked statistics.
	for _, mix := range [][2]dtype.DType{{dtype.BF16, dtype.F32}, {dtype.F16, dtype.F32}, {dtype.F32, dtype.BF16}} {
		t.Run(fmt.Sprintf("%s/channels=%s", mix[0], mix[1]), func(t *testing.T) {
			g.t = t
			batchNormCase(g, mix[0], mix[1], 3, 3, 6, "wb", true, true)
			batchNormCase(g, mix[0], mix[1], 3, 3, 6, "wb", false, true)
		})
	}
	for _, dt := range floatDTypes() {
		t.Run(fmt.Sprintf("%s/untracked", dt), func(t *testing.T) {
			g.t = t
			batchNormCase(g, dt, dt, 2, 3, 4, "wb", true, false)
		})
	}
}

func batchNormCase(g *rig, dt, pdt dtype.DType, n, c, hw int, affine string, training, track bool) {
	sdt := computeDType(dt)
	x, y := g.rand(dt, n, c, hw), g.rand(dt, n, c, hw)
	mean, invstd := g.rand(sdt, c), g.rand(sdt, c)
	w, b := none(), none()
	if affine != "none" {
		w = g.rand(pdt, c)
	}
	if affine == "wb" {
		b = g.rand(pdt, c)
	}
	rm, rv := none(), none()
	if track || !training {
		rm = g.rand(pdt, c)
		rv = g.of(pdt, g.uniform(c, 0.5, 2), c)
	}
	const momentum, eps = 0.1, 1e-5
	g.both(func(k device.Kernels, o func(twin) device.Operand) {
		k.BatchNorm(o(y), o(mean), o(invstd), o(x), o(w), o(b), o(rm), o(rv), n, c, hw, training, momentum, eps)
	})
	tol := rowTol(dt)
	g.check("BatchNorm y", y, tol)
	g.check("BatchNorm mean", mean, rowTol(sdt))
	g.check("BatchNorm invstd", invstd, rowTol(sdt))
	if !rm.cpu.Nil() {
		g.check("BatchNorm running mean", rm, rowTol(pdt))
		g.check("BatchNorm running var", rv, rowTol(pdt))
	}
	// The fused ReLU (the cpu's is BatchNorm then ReLU bit for bit).
	yr := g.rand(dt, n, c, hw)
	g.both(func(k device.Kernels, o func(twin) device.Operand) {
		k.BatchNormRelu(o(yr), o(mean), o(invstd), o(x), o(w), o(b), o(rm), o(rv), n, c, hw, training, momentum, eps)
	})
	g.check("BatchNormRelu y", yr, tol)
	// dw and db start as garbage: they are overwritten, not accumulated.
	dy, dx, dw, db := g.rand(dt, n, c, hw), g.rand(dt, n, c, hw), g.rand(pdt, c), g.rand(pdt, c)
	g.both(func(k device.Kernels, o func(twin) device.Operand) {
		k.BatchNormGrad(o(dx), o(dw), o(db), o(dy), o(x), o(w), o(mean), o(invstd), n, c, hw, training)
	})
	g.check("BatchNormGrad dx", dx, 4*tol)
	g.check("BatchNormGrad dw", dw, 4*rowTol(pdt))
	g.check("BatchNormGrad db", db, 4*rowTol(pdt))
	// Only dw; only dx; in eval only dx without x.
	dw2, dx2 := g.rand(pdt, c), g.rand(dt, n, c, hw)
	g.both(func(k device.Kernels, o func(twin) device.Operand) {
		k.BatchNormGrad(o(none()), o(dw2), o(none()), o(dy), o(x), o(w), o(mean), o(invstd), n, c, hw, training)
		k.BatchNormGrad(o(dx2), o(none()), o(none()), o(dy), o(x), o(w), o(mean), o(invstd), n, c, hw, training)
	})
	g.check("BatchNormGrad dw alone", dw2, 4*rowTol(pdt))
	g.check("BatchNormGrad dx alone", dx2, 4*tol)
	if !training {
		dx3, db3 := g.rand(dt, n, c, hw), g.rand(pdt, c)
		g.both(func(k device.Kernels, o func(twin) device.Operand) {
			k.BatchNormGrad(o(dx3), o(none()), o(db3), o(dy), o(none()), o(w), o(mean), o(invstd), n, c, hw, false)
		})
		g.check("BatchNormGrad eval dx without x", dx3, 4*tol)
		g.check("BatchNormGrad eval db without x", db3, 4*rowTol(pdt))
	}
}

// TestBatchNormBadOperands: operands the kernels cannot take raise a
// *device.KernelError.
func TestBatchNormBadOperands(t *testing.T) {
	p := devices(t)
	k := p.gpu.Kernels()
	x := p.put(t, dense(dtype.F32, 2, 3, 4), make([]byte, 2*3*4*4))
	y := p.put(t, dense(dtype.F32, 2, 3, 4), make([]byte, 2*3*4*4))
	s := p.put(t, dense(dtype.F32, 3), make([]byte, 3*4))
	s64 := p.put(t, dense(dtype.F64, 3), make([]byte, 3*8))
	s16 := p.put(t, dense(dtype.BF16, 3), make([]byte, 3*2))
	nb := nilTwin(dtype.F32).gpu
	for name, f := range map[string]func(){
		"f64 stats":      func() { k.BatchNorm(y.gpu, s64.gpu, s.gpu, x.gpu, nb, nb, nb, nb, 2, 3, 4, true, 0.1, 1e-5) },
		"bf16 stats":     func() { k.BatchNorm(y.gpu, s16.gpu, s16.gpu, x.gpu, nb, nb, nb, nb, 2, 3, 4, true, 0.1, 1e-5) },
		"f64 weight":     func() { k.BatchNorm(y.gpu, s.gpu, s.gpu, x.gpu, s64.gpu, nb, nb, nb, 2, 3, 4, true, 0.1, 1e-5) },
		"eval no stats":  func() { k.BatchNorm(y.gpu, s.gpu, s.gpu, x.gpu, nb, nb, nb, nb, 2, 3, 4, false, 0.1, 1e-5) },
		"wrong channels": func() { k.BatchNorm(y.gpu, s.gpu, s.gpu, x.gpu, nb, nb, nb, nb, 2, 4, 3, true, 0.1, 1e-5) },
		"grad no x":      func() { k.BatchNormGrad(y.gpu, nb, nb, y.gpu, nb, nb, s.gpu, s.gpu, 2, 3, 4, true) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				var ke *device.KernelError
				if r := recover(); r == nil {
					t.Fatal("no error raised")
				} else if e, ok := r.(error); !ok || !errors.As(e, &ke) {
					t.Fatalf("raised %v, want a *device.KernelError", r)
				}
			}()
			f()
		})
	}
}
