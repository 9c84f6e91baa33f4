package device

import (
	"errors"
	"testing"
)

// failingBackend backs memory until its budget of committed bytes runs
// out, as a GPU's driver does when another process holds the memory.
type failingBackend struct {
	next      uintptr
	budget    int64
	committed int64
}

var errDriverFull = errors.New("driver: out of memory")

func (f *failingBackend) Kind() string { return "failing" }
func (f *failingBackend) Alloc(n int64) (Memory, error) {
	f.next += 1 << 40
	return Memory{Ptr: f.next}, nil
}
func (f *failingBackend) Commit(m Memory, off, n int64) error {
	if f.committed+n > f.budget {
		return errDriverFull
	}
	f.committed += n
	return nil
}
func (f *failingBackend) Decommit(m Memory, off, n int64) { f.committed -= n }
func (f *failingBackend) Free(Memory)                     {}
func (f *failingBackend) Kernels() Kernels                { return nil }

// TestCommitFails: a Commit the backend cannot back is an *OOMError with
// the backend's error as Cause; the device's memory is as before, the
// cache has given its memory back to make room, and the device still
// serves what fits.
func TestCommitFails(t *testing.T) {
	be := &failingBackend{budget: 8 << 20}
	d := New("failing:0", be, Options{})
	l := Label{Tag: Activation, Op: "test"}
	a, err := d.Alloc(3<<20, l)
	if err != nil {
		t.Fatal(err)
	}
	cached, err := d.Alloc(4<<20, l)
	if err != nil {
		t.Fatal(err)
	}
	cached.Release() // its segment stays committed in the cache
	before := d.Stats()
	_, err = d.Alloc(30<<20, l)
	var oom *OOMError
	if !errors.As(err, &oom) || !errors.Is(err, errDriverFull) {
		t.Fatalf("got %v, want an *OOMError caused by the backend", err)
	}
	after := d.Stats()
	if after.Allocated != before.Allocated || after.Requested != before.Requested || after.Segments != before.Segments {
		t.Fatalf("the failed Alloc changed the device:\nbefore %+v\nafter  %+v", before, after)
	}
	if after.Reserved.Current != be.committed {
		t.Fatalf("Stats.Reserved %d, backend committed %d", after.Reserved.Current, be.committed)
	}
	b, err := d.Alloc(4<<20, l)
	if err != nil {
		t.Fatalf("an Alloc that fits after the failure: %v", err)
	}
	b.Release()
	a.Release()
}
