package device

import "errors"

// ErrInjected is the Cause of an *OOMError made by InjectOOM.
var ErrInjected = errors.New("injected by InjectOOM")

// InjectOOM makes the n-th Alloc from now (1: the next one) fail with an
// *OOMError, as if the capacity were reached there, and changes nothing
// else; n ≤ 0 cancels a pending injection. It is the test hook that fails a
// step at each of its allocations in turn: capacities alone reach only the
// allocations that need a new segment. The error's Cause is ErrInjected.
func (d *Device) InjectOOM(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inject = max(n, 0)
}

// injected reports whether this Alloc is the one InjectOOM chose; d.mu is
// held.
func (d *Device) injected() bool {
	if d.inject == 0 {
		return false
	}
	d.inject--
	return d.inject == 0
}
