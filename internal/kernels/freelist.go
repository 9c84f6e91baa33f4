package kernels

// FreeList is freeList for other packages: a mutex-guarded stack of
// reusable objects that, unlike sync.Pool, never drops what it holds, so
// scratch handed out per worker is allocated once and then reused.
type FreeList[E any] struct{ l freeList[E] }

// Get returns a held object, or a new zero one.
func (f *FreeList[E]) Get() *E { return f.l.get() }

// Put gives e back for reuse.
func (f *FreeList[E]) Put(e *E) { f.l.put(e) }
