package autograd

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Sharded leaves: a parameter whose storage comes and goes while the leaf
// itself — the *Tensor that modules, optimizers and graph edges hold —
// stays. ZeRO stage 3 keeps only a shard of every parameter on each rank,
// gathers a layer's parameters when an op needs them (SetFetch), rebinds
// the leaves to the gathered buffer without copying (Bind), saves them for
// backward as references rather than storage (SetSavedHooks), and drops
// the storage again after use (Unbind).

// Unbind drops a free-standing leaf's storage (its reference to its block)
// and keeps everything else: its identity, name, shape, dtype, device,
// gradient, hooks and requires-grad flag. The storage of autocast's casts
// of the leaf goes too (castshard.go); Bind frees them likewise. Until Bind gives it storage
// again the leaf reads as Released; an op that uses it runs its fetch
// function (SetFetch), which must bind it, or fails saying it is unbound.
// Release ends the state: a released leaf is never fetched.
func (t *Tensor) Unbind() {
	switch {
	case t.unbound:
		return
	case t.blk == nil:
		fail("unbind", "tensor %v %s (%s) was released", t.shape, t.dt, t.describe())
	case t.node != nil || t.scope != nil && !t.kept:
		fail("unbind", "tensor %v (%s) is not a free-standing leaf", t.shape, t.describe())
	}
	t.blk.Release()
	t.blk, t.off, t.strides, t.unbound = nil, 0, denseStrides(t.shape), true
	t.dropCasts()
}

// Bind makes a free-standing leaf use v's storage from now on, without
// copying: v must be contiguous, of the leaf's shape and dtype, on its
// device (usually a view of a buffer holding several leaves). The leaf
// takes its own reference, so v may be released; the leaf's previous
// storage, if any, is released. A leaf that was released cannot be bound.
func (t *Tensor) Bind(v *Tensor) {
	v.live("bind")
	switch {
	case t.blk == nil && !t.unbound:
		fail("bind", "tensor %v %s (%s) was released", t.shape, t.dt, t.describe())
	case t.node != nil || t.scope != nil && !t.kept:
		fail("bind", "tensor %v (%s) is not a free-standing leaf", t.shape, t.describe())
	case !sameShape(v.shape, t.shape) || v.dt != t.dt || v.dev != t.dev || !v.IsContiguous():
		fail("bind", "storage %v %s on %s (contiguous %v) for %v %s on %s: want the same shape, dtype and device, contiguous",
			v.shape, v.dt, v.dev.Name(), v.IsContiguous(), t.shape, t.dt, t.dev.Name())
	}
	v.blk.Retain()
	if t.blk != nil {
		t.blk.Release()
	}
	t.blk, t.off, t.strides, t.unbound = v.blk, v.off, append([]int(nil), v.strides...), false
	t.dropCasts()
}

// Unbound reports whether the leaf's storage was dropped by Unbind and not
// given back yet.
func (t *Tensor) Unbound() bool { return t.unbound }

// SetFetch sets the function that binds the leaf when something needs its
// storage while it is unbound: an op using it as an input, Scope.Use,
// reading its values. f receives the leaf and must Bind it (it may bind
// other leaves too — a whole bucket — but must not unbind an input of the
// op being run: the op fails if one of its inputs lost its storage). f
// runs on the goroutine that uses the leaf and may panic with the
// project's errors (*Error, *device.OOMError), which then fail that
// operation. nil removes it.
func (t *Tensor) SetFetch(f func(leaf *Tensor)) {
	if t.node != nil {
		fail("set_fetch", "tensor %v is the result of %s, not a leaf", t.shape, t.node.op)
	}
	t.fetch = f
}

// SetSavedHooks makes ops that save the leaf itself for backward (Linear,
// Conv2d and the norms save their weight) pack it with h instead of
// keeping a handle on its storage — ahead of any saved-tensor hooks of
// the scope, which still apply to everything else, views of the leaf
// included. Pack receives a handle on the leaf's storage at that moment;
// Unpack, in backward, returns a tensor equal to it (fetching the storage
// again if it was dropped); Free runs once when the graph no longer needs
// it. A sharded parameter is saved as a reference this way, so that what
// backward will need does not pin the gathered buffer. nil removes them.
func (t *Tensor) SetSavedHooks(h *SavedHooks) {
	switch {
	case t.node != nil:
		fail("set_saved_hooks", "tensor %v is the result of %s, not a leaf", t.shape, t.node.op)
	case h != nil && (h.Pack == nil || h.Unpack == nil):
		fail("set_saved_hooks", "Pack and Unpack must both be set")
	}
	t.saveHooks = h
}

// UnboundParam returns a parameter like Param that has no storage yet: an
// unbound leaf (see Unbind) on dev that holds no device memory until Bind
// or its fetch function gives it storage. A model built from such leaves
// has its whole structure — shapes, dtypes, names — at no cost, so that
// each data-parallel rank can materialise only its own shard of it.
func UnboundParam(dev *device.Device, dt dtype.DType, name string, shape ...int) *Tensor {
	t := handle("unbound_param", dev, dt, shape)
	t.name, t.requiresGrad, t.unbound = name, true, true
	return t
}
