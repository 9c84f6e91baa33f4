package autograd

import "github.com/headroom-ml/headroom/device"

// offloaded is a saved tensor moved to a host device by OffloadHooks.
type offloaded struct {
	host *Tensor
	dev  *device.Device
}

// OffloadHooks returns saved-tensor hooks that copy every tensor an op
// saves for backward to host (tag activation there) and release the
// op's saved handle; backward copies it back (tag activation, op
// offload_fetch) when the op that saved it runs, and the host copy is
// freed with the graph. The device block itself is freed only when no
// other handle holds it: the forward's own results keep theirs until the
// caller releases them, so this is a building block; LayerOffload, which
// checkpoint.Offload runs a stack of layers with, is the memory saving, and
// prefetches. The copy is synchronous. Gradients are bit-identical to keeping
// the tensors, since only bytes move.
//
//	s.PushSavedHooks(autograd.OffloadHooks(host))
//	defer s.PopSavedHooks()
func OffloadHooks(host *device.Device) SavedHooks {
	return SavedHooks{
		Pack: func(t *Tensor) any {
			c := alloc(nil, host, t.dt, t.shape, device.Label{Tag: device.Activation, Op: "offload"})
			transfer(c, t)
			dev := t.dev
			t.Release()
			return offloaded{host: c, dev: dev}
		},
		Unpack: func(p any) *Tensor {
			o := p.(offloaded)
			b := alloc(nil, o.dev, o.host.dt, o.host.shape, device.Label{Tag: device.Activation, Op: "offload_fetch"})
			transfer(b, o.host)
			return b
		},
		Free: func(p any) { p.(offloaded).host.Release() },
	}
}
