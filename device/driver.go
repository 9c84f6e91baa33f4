package device

// DriverMemory returns what the hardware's driver reports free and in
// total on the device (a GPU's cuMemGetInfo: all processes' memory, the
// driver's and libraries' own included, beside the allocator's numbers);
// ok is false for backends without a driver to ask (cpu, meta).
func (d *Device) DriverMemory() (free, total int64, ok bool) {
	mi, ok := d.be.(MemInfo)
	if !ok {
		return 0, 0, false
	}
	free, total = mi.MemInfo()
	return free, total, true
}
