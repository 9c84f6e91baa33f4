package autograd

import "github.com/headroom-ml/headroom/dtype"

type gradHook struct{ f func(*Tensor) }

// OnGradReady registers f to run on a leaf (a parameter) once per backward
// pass, as soon as the pass has added its last contribution to the leaf's
// Grad — while backward goes on with the rest of the graph. Data-parallel
// training starts reducing a gradient there. It returns the function that
// removes the hook.
func (t *Tensor) OnGradReady(f func(leaf *Tensor)) (remove func()) {
	if t.node != nil {
		fail("on_grad_ready", "tensor %v is the result of %s, not a leaf", t.shape, t.node.op)
	}
	h := &gradHook{f: f}
	t.gradHooks = append(t.gradHooks, h)
	return func() {
		for i, x := range t.gradHooks {
			if x == h {
				t.gradHooks = append(t.gradHooks[:i], t.gradHooks[i+1:]...)
				return
			}
		}
	}
}

// gradReady runs the leaf's hooks.
func (t *Tensor) gradReady() {
	for _, h := range append([]*gradHook(nil), t.gradHooks...) {
		h.f(t)
	}
}

// SetGrad makes g the leaf's gradient (releasing any it had): g must have
// the leaf's shape, gradient dtype (GradDType) and device, and the leaf takes over the handle
// (ZeroGrad and Release free it). Backward then adds into g in place — the
// way to keep gradients in a buffer of the caller's choosing (a flat
// buffer that data parallelism reduces at once). g is usually a view.
func (t *Tensor) SetGrad(g *Tensor) {
	t.live("set_grad")
	if t.node != nil {
		fail("set_grad", "tensor %v is the result of %s, not a leaf", t.shape, t.node.op)
	}
	t.adoptGrad(g, "set_grad")
}

// adoptGrad checks g against the leaf and makes it the leaf's gradient.
func (t *Tensor) adoptGrad(g *Tensor, op string) {
	if g == nil {
		fail(op, "no gradient tensor for leaf %v %s", t.shape, t.dt)
	}
	g.live(op)
	if !sameShape(g.shape, t.shape) || g.dt != t.GradDType() || g.dev != t.dev {
		if op == "grad_alloc" { // the leaf owns what its source returned
			defer g.Release()
		}
		fail(op, "gradient %v %s on %s for leaf %v %s on %s: want the leaf's shape, dtype and device (its gradient dtype is %s: SetGradDType)",
			g.shape, g.dt, g.dev.Name(), t.shape, t.dt, t.dev.Name(), t.GradDType())
	}
	if t.grad != nil && t.grad != g {
		t.grad.Release()
	}
	g.kept, g.scope = true, nil
	t.grad = g
}

// SetGradAlloc makes backward take the leaf's gradient from f when the
// leaf has none at its first contribution: f returns a zero-filled tensor
// of the leaf's shape, dtype and device (usually a view of a buffer the
// caller manages), which the leaf takes over as with SetGrad, and every
// contribution is added into it in place. f runs inside backward, before
// the leaf's first contribution of the pass is added (after ZeroGrad, that
// is once per pass); it may allocate (running out of memory there fails
// the backward). nil restores the default: backward makes the gradient
// itself, tagged gradient. Data parallelism puts gradients straight into
// communication buckets this way, allocated only when backward reaches
// them.
func (t *Tensor) SetGradAlloc(f func(leaf *Tensor) *Tensor) {
	if t.node != nil {
		fail("set_grad_alloc", "tensor %v is the result of %s, not a leaf", t.shape, t.node.op)
	}
	t.gradAlloc = f
}

// MoveInto copies a free-standing leaf's values into dst (contiguous, of
// the leaf's shape and dtype, on its device — usually a view of a flat
// buffer) and makes the leaf use dst's storage from then on, releasing its
// old block. Everything holding the leaf (a module, an optimizer) sees the
// new storage. Data parallelism and sharded optimizers put all parameters
// in one flat buffer this way.
func (t *Tensor) MoveInto(dst *Tensor) {
	t.live("move_into")
	dst.live("move_into")
	switch {
	case t.node != nil || t.scope != nil && !t.kept:
		fail("move_into", "tensor %v is not a free-standing leaf", t.shape)
	case !sameShape(dst.shape, t.shape) || dst.dt != t.dt || dst.dev != t.dev || !dst.IsContiguous():
		fail("move_into", "destination %v %s on %s (contiguous %v) for %v %s on %s: want the same shape, dtype and device, contiguous",
			dst.shape, dst.dt, dst.dev.Name(), dst.IsContiguous(), t.shape, t.dt, t.dev.Name())
	}
	copyInto(dst, t)
	old := t.blk
	dst.blk.Retain()
	t.blk, t.off, t.strides = dst.blk, dst.off, append([]int(nil), dst.strides...)
	old.Release()
}

// SetGradDType makes backward keep the leaf's gradient in dt instead of
// the leaf's own dtype: every contribution (in the dtype the op's backward
// computed it) is widened and added into a gradient of dt. A BF16 or F16
// parameter with an F32 gradient is Megatron's main_grad
// (accumulate_allreduce_grads_in_fp32): micro-batches accumulate, and data
// parallelism reduces, in F32, and an optimizer with master weights reads
// the F32 gradient directly. dt must be a float dtype at least as wide as
// the leaf's (F32 or F64 for a 16-bit leaf, the leaf's own dtype); it
// fails if the leaf has a gradient of another dtype now (ZeroGrad first).
// dtype.Invalid restores the default. Memory: a persistent gradient of
// dt.Size() bytes per element instead of the leaf's; each contribution
// in the op's dtype is transient (workspace until it is added).
func (t *Tensor) SetGradDType(dt dtype.DType) {
	switch {
	case t.blk == nil && !t.unbound: // an unbound leaf (deferred, sharded) is not fetched for this
		fail("set_grad_dtype", "tensor %v %s (%s) used after Release", t.shape, t.dt, t.describe())
	case t.node != nil:
		fail("set_grad_dtype", "tensor %v is the result of %s, not a leaf", t.shape, t.node.op)
	case dt != dtype.Invalid && (!dt.IsFloat() || !t.dt.IsFloat() || dt.Size() < t.dt.Size() || dt.IsLowPrecision() && dt != t.dt):
		fail("set_grad_dtype", "gradient dtype %s for leaf %v %s: want the leaf's dtype, f32 or f64 (at least as wide as the leaf)", dt, t.shape, t.dt)
	case t.grad != nil && t.grad.dt != dt && !(dt == dtype.Invalid && t.grad.dt == t.dt):
		fail("set_grad_dtype", "leaf %v %s has a %s gradient: ZeroGrad before changing its gradient dtype to %s", t.shape, t.dt, t.grad.dt, dt)
	}
	t.gradDT = dt
}

// GradDType returns the dtype of the leaf's gradient: SetGradDType's, or
// the leaf's own dtype by default.
func (t *Tensor) GradDType() dtype.DType {
	if t.gradDT == dtype.Invalid {
		return t.dt
	}
	return t.gradDT
}
