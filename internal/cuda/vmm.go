package cuda

import "unsafe"

// allocProp is CUmemAllocationProp: pinned device memory on one device.
type allocProp struct {
	typ     uint32 // CU_MEM_ALLOCATION_TYPE_PINNED = 1
	handles uint32 // requested handle types: none
	locType uint32 // CU_MEM_LOCATION_TYPE_DEVICE = 1
	locID   int32
	win32   uintptr
	flags   [8]byte
}

// accessDesc is CUmemAccessDesc: read-write access from one device.
type accessDesc struct {
	locType uint32
	locID   int32
	flags   uint32 // CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
}

func prop(dev int) allocProp { return allocProp{typ: 1, locType: 1, locID: int32(dev)} }

// Granularity returns the device's minimum physical allocation size for the
// virtual-memory calls.
func (d *Driver) Granularity(dev int) (int64, error) {
	p := prop(dev)
	var g uint64
	err := d.call("cuMemGetAllocationGranularity", d.cuMemGetAllocationGranularity, uintptr(unsafe.Pointer(&g)), uintptr(unsafe.Pointer(&p)), 0)
	return int64(g), err
}

// AddressReserve reserves n bytes of device address space (n a multiple of
// the granularity).
func (d *Driver) AddressReserve(n int64) (DevPtr, error) {
	var p DevPtr
	err := d.call("cuMemAddressReserve", d.cuMemAddressReserve, uintptr(unsafe.Pointer(&p)), uintptr(n), 0, 0, 0)
	return p, err
}

// AddressFree frees a reservation.
func (d *Driver) AddressFree(p DevPtr, n int64) error {
	return d.call("cuMemAddressFree", d.cuMemAddressFree, uintptr(p), uintptr(n))
}

// MapNew creates n bytes of physical memory on dev, maps them at p and
// gives dev read-write access; it returns the physical handle, and undoes
// what it did when a step fails.
func (d *Driver) MapNew(dev int, p DevPtr, n int64) (uint64, error) {
	pr := prop(dev)
	var h uint64
	if err := d.call("cuMemCreate", d.cuMemCreate, uintptr(unsafe.Pointer(&h)), uintptr(n), uintptr(unsafe.Pointer(&pr)), 0); err != nil {
		return 0, err
	}
	if err := d.call("cuMemMap", d.cuMemMap, uintptr(p), uintptr(n), 0, uintptr(h), 0); err != nil {
		_ = d.call("cuMemRelease", d.cuMemRelease, uintptr(h))
		return 0, err
	}
	acc := accessDesc{locType: 1, locID: int32(dev), flags: 3}
	if err := d.call("cuMemSetAccess", d.cuMemSetAccess, uintptr(p), uintptr(n), uintptr(unsafe.Pointer(&acc)), 1); err != nil {
		_ = d.call("cuMemUnmap", d.cuMemUnmap, uintptr(p), uintptr(n))
		_ = d.call("cuMemRelease", d.cuMemRelease, uintptr(h))
		return 0, err
	}
	return h, nil
}

// Unmap unmaps n bytes at p and releases their physical handle h.
func (d *Driver) Unmap(p DevPtr, n int64, h uint64) error {
	if err := d.call("cuMemUnmap", d.cuMemUnmap, uintptr(p), uintptr(n)); err != nil {
		return err
	}
	return d.call("cuMemRelease", d.cuMemRelease, uintptr(h))
}
