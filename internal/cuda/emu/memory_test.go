package emu

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"
)

// allocProp is CUmemAllocationProp: pinned device memory on device 0.
type allocProp struct {
	typ, handleTypes int32
	locType, locID   int32
	win32            uintptr
	flags            [8]byte
}

// accessDesc is CUmemAccessDesc.
type accessDesc struct {
	locType, locID int32
	flags          int32
}

func devProp() *allocProp { return &allocProp{typ: 1, locType: 1} }

func freeBytes(t *testing.T, d *drv) (free, total uintptr) {
	t.Helper()
	check(t, "cuMemGetInfo_v2", d.MemGetInfo(&free, &total))
	return free, total
}

func TestVirtualMemory(t *testing.T) {
	d := setup(t)
	const mib = 1 << 20
	var g uintptr
	check(t, "cuMemGetAllocationGranularity", d.Granularity(&g, unsafe.Pointer(devProp()), 0))
	if g != 2*mib {
		t.Fatalf("granularity = %d, want 2 MiB", g)
	}
	free0, _ := freeBytes(t, d)
	var base uintptr
	check(t, "cuMemAddressReserve", d.AddressReserve(&base, 8*mib, 0, 0, 0))
	if base%(2*mib) != 0 {
		t.Fatalf("reservation at %#x is not 2 MiB aligned", base)
	}
	var h1, h2, bad uint64
	if r := d.MemCreate(&bad, 3*mib, unsafe.Pointer(devProp()), 0); r != errInvalidValue {
		t.Errorf("cuMemCreate(3 MiB) = %d, want %d (not a multiple of the granularity)", r, errInvalidValue)
	}
	check(t, "cuMemCreate", d.MemCreate(&h1, 2*mib, unsafe.Pointer(devProp()), 0))
	check(t, "cuMemCreate", d.MemCreate(&h2, 4*mib, unsafe.Pointer(devProp()), 0))
	if free, _ := freeBytes(t, d); free != free0-6*mib {
		t.Errorf("free after creating 6 MiB = %d, want %d", free, free0-6*mib)
	}
	if r := d.MemMap(base+mib, 2*mib, 0, h1, 0); r != errInvalidValue {
		t.Errorf("cuMemMap at a misaligned address = %d, want %d", r, errInvalidValue)
	}
	check(t, "cuMemMap", d.MemMap(base, 2*mib, 0, h1, 0))
	check(t, "cuMemMap", d.MemMap(base+2*mib, 4*mib, 0, h2, 0))
	if r := d.HtoD(base, unsafe.Pointer(&[1]byte{}), 1); r != errInvalidValue {
		t.Errorf("a copy into mapped memory without access = %d, want %d", r, errInvalidValue)
	}
	rw := accessDesc{locType: 1, flags: 3}
	check(t, "cuMemSetAccess", d.MemSetAccess(base, 6*mib, unsafe.Pointer(&rw), 1))

	// The two mappings are one contiguous range for copies and kernels.
	fill := module(t, d, "fill_f64")[0]
	n := int64(6 * mib / 8)
	check(t, "cuLaunchKernel", launch(d, fill, dim(64, 1, 1), dim(256, 1, 1), 0, 0, base, n, 3.25))
	across := []float64{1, 2, 3, 4}
	upload(t, d, base+2*mib-16, across)
	got := download[float64](t, d, base+2*mib-24, 6)
	if want := []float64{3.25, 1, 2, 3, 4, 3.25}; !equal(got, want) {
		t.Errorf("copies across two mappings read %v, want %v", got, want)
	}
	if r := d.HtoD(base+6*mib-8, unsafe.Pointer(&across[0]), 16); r != errInvalidValue {
		t.Errorf("a copy running past the mapped range = %d, want %d", r, errInvalidValue)
	}

	check(t, "cuMemUnmap", d.MemUnmap(base, 2*mib))
	if r := d.HtoD(base, unsafe.Pointer(&across[0]), 8); r != errInvalidValue {
		t.Errorf("a copy into unmapped memory = %d, want %d", r, errInvalidValue)
	}
	check(t, "cuMemRelease", d.MemRelease(h1))
	check(t, "cuMemRelease", d.MemRelease(h2)) // still mapped: counted until unmapped
	if free, _ := freeBytes(t, d); free != free0-4*mib {
		t.Errorf("free with 4 MiB still mapped = %d, want %d", free, free0-4*mib)
	}
	if got := download[float64](t, d, base+2*mib, 1)[0]; got != 3 {
		t.Errorf("a released but mapped allocation reads %v, want 3", got)
	}
	check(t, "cuMemUnmap", d.MemUnmap(base+2*mib, 4*mib))
	check(t, "cuMemAddressFree", d.AddressFree(base, 8*mib))
	if free, _ := freeBytes(t, d); free != free0 {
		t.Errorf("free after releasing everything = %d, want %d", free, free0)
	}
}

func TestOutOfMemory(t *testing.T) {
	d := setup(t)
	free, total := freeBytes(t, d)
	const g = 2 << 20
	var h, h2 uint64
	check(t, "cuMemCreate(all free memory)", d.MemCreate(&h, free/g*g, unsafe.Pointer(devProp()), 0))
	if r := d.MemCreate(&h2, g, unsafe.Pointer(devProp()), 0); r != errOutOfMemory {
		t.Errorf("cuMemCreate beyond the total of %d bytes = %d, want %d (CUDA_ERROR_OUT_OF_MEMORY)", total, r, errOutOfMemory)
	}
	var p uintptr
	if r := d.MemAlloc(&p, g); r != errOutOfMemory {
		t.Errorf("cuMemAlloc_v2 beyond the total = %d, want %d", r, errOutOfMemory)
	}
	check(t, "cuMemRelease", d.MemRelease(h))
	check(t, "cuMemAlloc_v2 after the release", d.MemAlloc(&p, g))
	check(t, "cuMemFree_v2", d.MemFree(p))
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEnvironment runs a child process with HEADROOM_EMU_MEMORY and
// HEADROOM_EMU_DEVICES set (the C environment is the one a process starts with).
func TestEnvironment(t *testing.T) {
	if os.Getenv("HEADROOM_EMU_ENV_CHILD") == "1" {
		d := setup(t)
		_, total := freeBytes(t, d)
		var n int32
		check(t, "cuDeviceGetCount", d.DeviceGetCount(&n))
		fmt.Printf("total=%d devices=%d\n", total, n)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEnvironment$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "HEADROOM_EMU_ENV_CHILD=1", "HEADROOM_EMU_MEMORY=67108864", "HEADROOM_EMU_DEVICES=3")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "total=67108864 devices=3") {
		t.Fatalf("child with HEADROOM_EMU_MEMORY=67108864 HEADROOM_EMU_DEVICES=3: err %v, output:\n%s\nwant total=67108864 devices=3", err, out)
	}
}

func TestSetMemory(t *testing.T) {
	d := setup(t)
	free0, total0 := freeBytes(t, d)
	used := total0 - free0
	const g = 2 << 20
	check(t, "emu.SetMemory", errCode(theLibs.SetMemory(int64(used+4*g))))
	defer theLibs.SetMemory(0)
	if free, total := freeBytes(t, d); total != used+4*g || free != 4*g {
		t.Fatalf("after SetMemory(used + 8 MiB): free %d, total %d; want %d, %d", free, total, 4*g, used+4*g)
	}
	var h, h2 uint64
	check(t, "cuMemCreate(8 MiB)", d.MemCreate(&h, 4*g, unsafe.Pointer(devProp()), 0))
	if r := d.MemCreate(&h2, g, unsafe.Pointer(devProp()), 0); r != errOutOfMemory {
		t.Errorf("cuMemCreate past a SetMemory total = %d, want %d", r, errOutOfMemory)
	}
	check(t, "cuMemRelease", d.MemRelease(h))
	check(t, "emu.SetMemory(0)", errCode(theLibs.SetMemory(0)))
	if _, total := freeBytes(t, d); total != total0 {
		t.Errorf("after SetMemory(0) total = %d, want %d", total, total0)
	}
}

// errCode turns a Go error into a result check can report.
func errCode(err error) int32 {
	if err != nil {
		return -1
	}
	return 0
}
