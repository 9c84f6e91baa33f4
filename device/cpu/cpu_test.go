package cpu_test

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
)

func TestNew(t *testing.T) {
	d := cpu.New(3, device.Options{Capacity: 1 << 30})
	if d.Name() != "cpu:3" || d.Kind() != "cpu" || d.Capacity() != 1<<30 || d.Kernels() == nil {
		t.Errorf("cpu.New(3): name %q kind %q capacity %d kernels %v", d.Name(), d.Kind(), d.Capacity(), d.Kernels())
	}
	defer func() {
		if recover() == nil {
			t.Error("cpu.New(-1) did not panic")
		}
	}()
	cpu.New(-1, device.Options{})
}

// TestMemory: fresh memory is zeroed and writable; a block's bytes are
// exactly its length and sit at its offset in the segment.
func TestMemory(t *testing.T) {
	d := cpu.New(0, device.Options{})
	for _, n := range []int64{1, 1000, 1 << 20, 5 << 20, 12 << 20} {
		b, err := d.Alloc(n, device.Label{Tag: device.Activation})
		if err != nil {
			t.Fatal(err)
		}
		p := b.Bytes()
		if int64(len(p)) != n {
			t.Fatalf("Alloc(%d).Bytes() has %d bytes", n, len(p))
		}
		if i := bytes.IndexFunc(p, func(r rune) bool { return r != 0 }); i >= 0 {
			t.Errorf("Alloc(%d): fresh memory not zeroed at byte %d", n, i)
		}
		for i := range p {
			p[i] = byte(i % 251)
		}
		for i := range p {
			if p[i] != byte(i%251) {
				t.Fatalf("Alloc(%d): byte %d reads %d after writing %d", n, i, p[i], byte(i%251))
			}
		}
		if b.Ptr() != 0 {
			t.Errorf("host block has a device Ptr %#x", b.Ptr())
		}
		defer b.Release()
	}
}

// TestNeighbours: blocks carved from one segment are adjacent in host
// memory as their addresses say, and writing one leaves the next intact.
func TestNeighbours(t *testing.T) {
	d := cpu.New(0, device.Options{})
	a, _ := d.Alloc(1000, device.Label{})
	b, _ := d.Alloc(1000, device.Label{})
	defer a.Release()
	defer b.Release()
	if b.Addr()-a.Addr() != 1024 {
		t.Fatalf("addresses %#x %#x not 1024 apart", a.Addr(), b.Addr())
	}
	pa, pb := a.Bytes(), b.Bytes()
	if cap(pa) != 1000 {
		t.Errorf("cap(a.Bytes()) = %d: the slice reaches past the block", cap(pa))
	}
	if d := uintptr(unsafe.Pointer(&pb[0])) - uintptr(unsafe.Pointer(&pa[0])); d != 1024 {
		t.Errorf("b's bytes start %d bytes after a's, want 1024", d)
	}
	for i := range pb {
		pb[i] = 0xAB
	}
	for i := range pa {
		pa[i] = 0x11
	}
	if bytes.Count(pb, []byte{0xAB}) != len(pb) {
		t.Error("writing a changed b")
	}
}

// TestEmptyCacheUnmaps: EmptyCache returns whole segments, and memory
// reserved again afterwards is fresh (zeroed) memory.
func TestEmptyCacheUnmaps(t *testing.T) {
	d := cpu.New(0, device.Options{})
	var bs []*device.Block
	for range 3 {
		b, err := d.Alloc(12<<20, device.Label{Tag: device.Activation}) // own segments
		if err != nil {
			t.Fatal(err)
		}
		p := b.Bytes()
		for i := range p {
			p[i] = 0xFF
		}
		bs = append(bs, b)
	}
	keep, _ := d.Alloc(100, device.Label{Tag: device.Parameter})
	if st := d.Stats(); st.Segments != 4 || st.Reserved.Current != 3*(12<<20)+(2<<20) {
		t.Fatalf("setup: %d segments, %d reserved", st.Segments, st.Reserved.Current)
	}
	for _, b := range bs {
		b.Release()
	}
	d.EmptyCache()
	st := d.Stats()
	if st.Segments != 1 || st.Reserved.Current != 2<<20 || st.Reserved.Frees != 3 {
		t.Errorf("after EmptyCache: %d segments, %d reserved, %d freed; want 1, 2 MiB, 3", st.Segments, st.Reserved.Current, st.Reserved.Frees)
	}
	b, err := d.Alloc(12<<20, device.Label{Tag: device.Activation})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(b.Bytes(), []byte{0}) != 12<<20 {
		t.Error("a segment reserved after EmptyCache is not fresh zeroed memory")
	}
	b.Release()
	keep.Release()
	d.EmptyCache()
	if st := d.Stats(); st.Segments != 0 || st.Reserved.Current != 0 {
		t.Errorf("after freeing everything: %d segments, %d reserved", st.Segments, st.Reserved.Current)
	}
}

// TestCapacity: a logical cpu device with a capacity stands in for a small
// accelerator.
func TestCapacity(t *testing.T) {
	d := cpu.New(0, device.Options{Capacity: 4 << 20})
	a, err := d.Alloc(3<<20, device.Label{Tag: device.Parameter})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Alloc(2<<20, device.Label{Tag: device.Activation})
	var oom *device.OOMError
	if !errors.As(err, &oom) || oom.Device != "cpu:0" || oom.Reserved != 3<<20 {
		t.Fatalf("Alloc beyond capacity: %v", err)
	}
	a.Release()
}
