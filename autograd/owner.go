package autograd

// A Scope belongs to one goroutine at a time. Its bookkeeping — the list
// of tensors it owns, the graph's nodes, autocast's cached casts, its
// modes — has no lock: ops pay nothing for one. What it has instead is an
// in-use marker (one atomic word per scope tree, on the root): every
// change to that bookkeeping holds it while it runs — an allocation and
// the registration of its tensor, a view, the recording of a node (with
// the saved-tensor hooks' Pack), a cast cached by autocast, Release, a
// change of mode or layer path — and an op that finds it held fails with
// *Error saying that another goroutine uses the scope at the same moment
// (wrapping ErrScopeInUse).
// The check is one compare-and-swap and one store per change.
//
// So two goroutines using one scope at once get an error, not a
// "concurrent map writes" crash or a corrupted graph: the second to touch
// the bookkeeping while the first is changing it fails (the marker makes
// their changes exclusive, so none is lost or torn). The check is not a
// lock and not a proof of absence: two goroutines whose changes happen
// never to overlap are not caught, but sustained concurrent use overlaps
// within a few hundred ops. Ops nest (a composite op calls others, a
// backward step runs ops) and Go gives no cheap goroutine identity, so the
// marker cannot span a whole op; it spans whole steps instead in Run: a
// second Run of a scope while one runs fails at once with ErrScopeInUse,
// having done nothing, so steps written with Run never interleave, and
// Run does not release a scope that another goroutine is using. Handing a
// scope over is legitimate and needs no call: when one goroutine is done
// with it (its op or its Run returned), another may use it, provided the
// handover itself synchronises them (a channel send, a WaitGroup, a
// mutex), as any data passed between goroutines must. The backward
// engine's own bookkeeping (its leaf counts) is not under the marker yet.

// hold marks the scope tree in use by op; it fails when another goroutine
// holds the mark. unhold ends it.
func (s *Scope) hold(op string) {
	if !s.root().busy.CompareAndSwap(0, 1) {
		inUse(op)
	}
}

// inUse fails op for a scope held by another goroutine.
func inUse(op string) {
	panic(&Error{Op: op, Err: ErrScopeInUse, Msg: "the scope is in use by another goroutine at this moment: a Scope and its tensors belong to one goroutine at a time; give each goroutine its own scope, or hand it over (finish with it, then pass it on through a channel)"})
}

// unhold ends hold.
func (s *Scope) unhold() { s.root().busy.Store(0) }
