package autograd

// Autocast's casts of gathered parameters. Under ZeRO stage 3 a parameter
// (a leaf with a fetch function, see SetFetch) is bound to its gathered
// bucket only while the bucket's layers run; caching its autocast cast for
// the whole step would keep a 16-bit copy of the whole model on every
// rank. So the cast of such a leaf keeps its identity for the step — one
// graph node, to which every use adds its gradient, as for any cached cast
// — but holds storage only while the leaf is bound:
//
//   - Unbind and Bind free the storage of the leaf's casts (each cast then
//     reads as unbound); castParam casts again into fresh storage on the
//     cast's next use in the step.
//   - When the leaf has saved-tensor hooks, an op that saves the cast for
//     backward saves the leaf through those hooks instead (a reference,
//     under stage 3), and backward casts again from what they unpack —
//     or uses the cast itself if it is bound at that moment.
//
// Casting is deterministic, so a cast made again holds the same bits, and
// the gradients are those of the step-long cache (the same node sums the
// same gradients in the same order).

// shardCast makes c, the new cast of leaf t, follow t's binding when t is
// fetched on demand.
func (s *Scope) shardCast(c, t *Tensor) {
	if t.fetch == nil {
		return
	}
	t.addCast(c)
	if t.saveHooks != nil {
		c.saveHooks = castHooks(s, c, t)
	}
}

// refill gives c, a cast of t whose storage went with t's, new storage
// holding t's values cast again (fetching t if it is unbound).
func (s *Scope) refill(c, t *Tensor) {
	t.live("autocast")
	s.hold("autocast")
	defer s.unhold()
	c.blk = t.dev.MustAlloc(c.Bytes(), s.castLabel(t))
	c.unbound = false
	copyCast(c, t)
	t.addCast(c)
}

// addCast records c as a cast of t holding storage, forgetting the casts
// that hold none any more (their scope was released).
func (t *Tensor) addCast(c *Tensor) {
	live := t.casts[:0]
	for _, x := range t.casts {
		if x.blk != nil {
			live = append(live, x)
		}
	}
	t.casts = append(live, c)
}

// dropCasts frees the storage of t's casts; they read as unbound until
// castParam casts them again.
func (t *Tensor) dropCasts() {
	for _, c := range t.casts {
		if c.blk != nil {
			c.blk.Release()
			c.blk, c.unbound = nil, true
		}
	}
	clear(t.casts)
	t.casts = t.casts[:0]
}

// castRef is a saved cast packed by reference: what the leaf's own
// saved-tensor hooks packed the leaf into.
type castRef struct {
	hooks  *SavedHooks
	packed any
}

// castHooks returns the saved-tensor hooks of c, the cast of leaf t: the
// saved cast is dropped and t is packed with its own hooks; Unpack returns
// c if it is bound, or a cast of what t's hooks unpack.
func castHooks(s *Scope, c, t *Tensor) *SavedHooks {
	return &SavedHooks{
		Pack: func(h *Tensor) any {
			h.Release()
			t.live("autocast")
			return castRef{t.saveHooks, t.saveHooks.Pack(savedHandle(t))}
		},
		Unpack: func(p any) *Tensor {
			r := p.(castRef)
			src := r.hooks.Unpack(r.packed)
			defer src.Release()
			if c.blk != nil {
				return alias(c)
			}
			out := alloc(nil, src.dev, c.dt, c.shape, s.castLabel(t))
			copyCast(out, src)
			return out
		},
		Free: func(p any) {
			if r := p.(castRef); r.hooks.Free != nil {
				r.hooks.Free(r.packed)
			}
		},
	}
}

// savedHandle returns a handle on t's storage whose reference counts as
// saved for backward (Block.RetainSaved), as a node holds what it saves.
func savedHandle(t *Tensor) *Tensor {
	t.blk.RetainSaved()
	return &Tensor{blk: t.blk, dev: t.dev, off: t.off, shape: t.shape, strides: t.strides, dt: t.dt, name: t.name, saved: true}
}

// alias returns a new free-standing handle on t's storage.
func alias(t *Tensor) *Tensor {
	t.blk.Retain()
	return &Tensor{blk: t.blk, dev: t.dev, off: t.off, shape: t.shape, strides: t.strides, dt: t.dt}
}
