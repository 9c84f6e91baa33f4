package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/cuda"
)

func open(t testing.TB, o device.Options) (*device.Device, *backend) {
	t.Helper()
	d, err := Open(0, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return d, backendOf(d)
}

func alloc(t testing.TB, d *device.Device, n int64) *device.Block {
	t.Helper()
	b, err := d.Alloc(n, device.Label{Tag: device.Activation, Op: "test"})
	if err != nil {
		t.Fatalf("Alloc(%d): %v", n, err)
	}
	return b
}

// used returns the bytes the fake driver has handed out (all devices).
func used(t testing.TB, be *backend) int64 {
	free, total := be.MemInfo()
	if total == 0 {
		t.Fatal("MemInfo: no total")
	}
	return total - free
}

// TestOpenCloseGivesBack: what a device takes from the driver (segments,
// its cuBLAS workspace) comes back at Close, seen from another device.
func TestOpenCloseGivesBack(t *testing.T) {
	watch, wbe := open(t, device.Options{})
	defer watch.Close()
	before := used(t, wbe)
	d, be := open(t, device.Options{})
	if used(t, wbe) <= before {
		t.Fatalf("a second device took nothing from the driver (used %d)", used(t, wbe))
	}
	bs := []*device.Block{alloc(t, d, 100), alloc(t, d, 3<<20), alloc(t, d, 30<<20)}
	for _, b := range bs[:2] {
		b.Release()
	}
	if err := d.Close(); err == nil || !strings.Contains(err.Error(), "1 live blocks") {
		t.Fatalf("Close with a live block: %v, want a leak of 1 block", err)
	}
	if !be.closing || be.closed {
		t.Fatal("backend closed with a live segment")
	}
	bs[2].Release()
	if !be.closed {
		t.Fatal("backend not closed after the last block went")
	}
	if got := used(t, wbe); got != before {
		t.Fatalf("driver used %d after Close, %d before Open", got, before)
	}
}

// TestRoundTrip: Write then Read gives the bytes back, through several
// staging chunks.
func TestRoundTrip(t *testing.T) {
	d, _ := open(t, device.Options{})
	defer d.Close()
	n := 2*stagingBytes + 12345
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(rand.Uint32())
	}
	b := alloc(t, d, int64(n))
	defer b.Release()
	o := device.Operand{Block: b, DType: dtype.I8, Shape: []int{n}}
	k := d.Kernels()
	k.Write(o, src)
	got := make([]byte, n)
	k.Read(got, o)
	if !bytes.Equal(got, src) {
		t.Fatal("Read after Write differs")
	}
}

// TestGranules: physical memory is mapped exactly under the granules that
// hold committed bytes, and the committed bytes are Stats.Reserved.
func TestGranules(t *testing.T) {
	d, be := open(t, device.Options{})
	defer d.Close()
	g := be.g.gran
	base, mapped0 := used(t, be), be.Mapped()
	check := func(when string) {
		t.Helper()
		var committed, mapped int64
		be.mu.Lock()
		for _, s := range be.segs {
			for i, c := range s.committed {
				committed += c
				if c > 0 {
					mapped += g
				}
				if (c > 0) != (s.handle[i] != 0) {
					t.Fatalf("%s: granule %d: %d committed bytes, handle %d", when, i, c, s.handle[i])
				}
			}
		}
		be.mu.Unlock()
		if r := d.Stats().Reserved.Current; committed != r {
			t.Fatalf("%s: %d bytes committed in the backend, Stats.Reserved %d", when, committed, r)
		}
		if m := be.Mapped(); m != mapped {
			t.Fatalf("%s: Mapped %d, granules with committed bytes ×%d = %d", when, m, g, mapped)
		}
		if u := used(t, be) - base; u != mapped-mapped0 {
			t.Fatalf("%s: driver used %d more bytes, mapped %d more", when, u, mapped-mapped0)
		}
	}
	check("open")
	var live []*device.Block
	for i, n := range []int64{512, 700 << 10, 3 << 20, 11 << 20, 25 << 20, 1, 1 << 20} {
		live = append(live, alloc(t, d, n))
		check("alloc " + string(rune('a'+i)))
	}
	for i, b := range live {
		if i%2 == 0 {
			b.Release()
		}
	}
	check("release")
	d.EmptyCache()
	check("empty cache")
	for i, b := range live {
		if i%2 == 1 {
			b.Release()
		}
	}
	d.EmptyCache()
	check("all released")
}

// TestOOMCapacity: the capacity bounds what the device reserves, and the
// OOM report adds the driver's view.
func TestOOMCapacity(t *testing.T) {
	d, be := open(t, device.Options{Capacity: 64 << 20})
	defer d.Close()
	_, total := be.MemInfo()
	_, err := d.Alloc(100<<20, device.Label{Tag: device.Activation, Op: "test"})
	var oom *device.OOMError
	if !errors.As(err, &oom) || oom.DriverTotal != total || !strings.Contains(err.Error(), "driver:") {
		t.Fatalf("got %v, want an OOMError with the driver's %d total", err, total)
	}
}

// TestOOMDriver: a second device on the same GPU sees memory taken by the
// first as a driver failure: an OOMError that changes nothing.
func TestOOMDriver(t *testing.T) {
	a, _ := open(t, device.Options{})
	defer a.Close()
	b, _ := open(t, device.Options{})
	defer b.Close()
	big := b.Capacity() * 6 / 10 // each device's capacity is the free memory at its Open
	x := alloc(t, a, big)
	defer x.Release()
	st := b.Stats()
	_, err := b.Alloc(big, device.Label{Tag: device.Activation, Op: "test"})
	var oom *device.OOMError
	if !errors.As(err, &oom) || !errors.Is(err, cuda.ErrOutOfMemory) {
		t.Fatalf("got %v, want an OOMError caused by CUDA_ERROR_OUT_OF_MEMORY", err)
	}
	after := b.Stats()
	if after.Reserved.Current != st.Reserved.Current || after.Allocated != st.Allocated || after.Segments != st.Segments || after.Requested != st.Requested {
		t.Fatalf("a failed Alloc changed the device: before %+v after %+v", st, after)
	}
	y := alloc(t, b, 1<<20) // the device still works
	y.Release()
}

// TestWorkspace: cuBLAS's workspace is a block of the device, tagged
// workspace, and not a leak.
func TestWorkspace(t *testing.T) {
	d, _ := open(t, device.Options{})
	defer d.Close()
	var found bool
	for _, g := range d.Live() {
		if g.Tag == device.Workspace && strings.Contains(g.Creator, "cublas") && g.Bytes == WorkspaceBytes(9) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no cublas workspace block of %d bytes among %+v", WorkspaceBytes(9), d.Live())
	}
	if l := d.Leaks(); len(l) != 0 {
		t.Fatalf("Leaks reports the workspace: %+v", l)
	}
}

// TestMissingKernel: a kernel no source defines is a KernelError raised at
// the next call.
func TestMissingKernel(t *testing.T) {
	d, _ := open(t, device.Options{})
	defer d.Close()
	k := d.Kernels().(*kern)
	k.launch("no_such_kernel_f32", Linear(1))
	defer func() {
		r := recover()
		ke, ok := r.(*device.KernelError)
		if !ok || ke.Op != "no_such_kernel_f32" || !errors.Is(ke, ErrNoKernel) {
			t.Fatalf("recovered %v, want a KernelError for no_such_kernel_f32", r)
		}
	}()
	b := alloc(t, d, 4)
	defer b.Release()
	k.Read(make([]byte, 4), device.Operand{Block: b, DType: dtype.F32, Shape: []int{1}})
}

// TestNoVMM: with HEADROOM_CUDA_VMM=0 segments are whole cuMemAlloc
// allocations; values round-trip, GEMM works, and Close gives everything
// back.
func TestNoVMM(t *testing.T) {
	watch, wbe := open(t, device.Options{})
	defer watch.Close()
	before := used(t, wbe)
	t.Setenv("HEADROOM_CUDA_VMM", "0")
	d, be := open(t, device.Options{})
	if be.g.vmm {
		t.Fatal("VMM on with HEADROOM_CUDA_VMM=0")
	}
	o := device.Operand{Block: alloc(t, d, 16), DType: dtype.F32, Shape: []int{4}}
	fill(d.Kernels().(*kern), o, 7)
	if v := readF64(o, d); v[0] != 7 || v[3] != 7 {
		t.Fatalf("read %v, want 7s", v)
	}
	if got := used(t, wbe) - before; got < d.Stats().Reserved.Current {
		t.Fatalf("driver holds %d for the device, Reserved %d: whole segments must be allocated", got, d.Stats().Reserved.Current)
	}
	o.Block.Release()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := used(t, wbe); got != before {
		t.Fatalf("driver used %d after Close, %d before Open", got, before)
	}
}

// TestOpenIndex: an index the machine lacks is ErrNoDevice.
func TestOpenIndex(t *testing.T) {
	n, err := Available()
	if err != nil || n < 1 {
		t.Fatalf("Available: %d, %v", n, err)
	}
	for _, i := range []int{-1, n} {
		if _, err := Open(i, device.Options{}); !errors.Is(err, ErrNoDevice) {
			t.Fatalf("Open(%d) with %d devices: %v, want ErrNoDevice", i, n, err)
		}
	}
}

// TestKernelPath: an open device names its compute capability and the
// driver's name of the GPU, read here from the driver itself ("cuda sm_90
// (headroom emulator)" on the emulator); a cpu device has none.
func TestKernelPath(t *testing.T) {
	g := devices(t)
	drv, err := cuda.LoadDriver()
	if err != nil {
		t.Fatal(err)
	}
	h, err := drv.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	major, err1 := drv.Attribute(h, cuda.AttrComputeCapabilityMajor)
	minor, err2 := drv.Attribute(h, cuda.AttrComputeCapabilityMinor)
	name, err3 := drv.DeviceName(h)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("cuda sm_%d%d (%s)", major, minor, name)
	if TF32() {
		want += " +tf32"
	}
	if got := KernelPath(g.gpu); got != want {
		t.Errorf("KernelPath(cuda:0) = %q, want %q", got, want)
	}
	t.Logf("KernelPath(cuda:0) = %q", want)
	if got := KernelPath(g.cpu); got != "" {
		t.Errorf("KernelPath(cpu) = %q, want \"\"", got)
	}
}
