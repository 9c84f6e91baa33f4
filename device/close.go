package device

import (
	"fmt"
	"strings"
)

// LeakError is what Close returns when blocks are still live: the memory
// the program failed to release, by tag and creator, largest first.
type LeakError struct {
	Device string
	// Bytes and Blocks count every live block; Groups break them down.
	Bytes  int64
	Blocks int
	Groups []LiveGroup
}

func (e *LeakError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "device %s: closed with %d live blocks (%s) still held:", e.Device, e.Blocks, FormatBytes(e.Bytes))
	for i, g := range e.Groups {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more groups", len(e.Groups)-i)
			break
		}
		fmt.Fprintf(&b, " %s %s (%s, %d blocks)", g.Tag, g.Creator, FormatBytes(g.Bytes), g.Blocks)
		if i < len(e.Groups)-1 && i < 4 {
			b.WriteByte(';')
		}
	}
	return b.String()
}

// Close gives the device's memory back to its backend: every cached
// segment at once, and each segment that still holds a live block as soon
// as its last block is released. After Close, Alloc fails; Release of the
// blocks that were live keeps working, so the owners of a leaked block can
// still give it back. Close is idempotent. It returns a *LeakError when
// blocks were still live (their memory is not lost: it returns with them),
// nil otherwise.
//
// Devices hold memory outside Go's heap (mmap on cpu, the driver's on an
// accelerator), which the garbage collector never reclaims: a program that
// makes devices in a loop (a planner probing many configurations) must
// Close each one.
func (d *Device) Close() error {
	if c, ok := d.be.(Closer); ok && !d.Closed() {
		c.Close()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	d.releaseCache(false)
	if d.live == nil {
		return nil
	}
	e := &LeakError{Device: d.name, Groups: d.liveGroups(func(Tag) bool { return true })}
	for _, g := range e.Groups {
		e.Bytes += g.Bytes
		e.Blocks += g.Blocks
	}
	return e
}

// Closer is implemented by backends that hold resources of their own (an
// accelerator's context, streams, libraries, blocks of the device's memory
// for a library's workspace). Device.Close calls Close first, outside the
// device's lock, so that the backend can release its blocks; the backend
// gives the rest back when the device frees its last segment (at once when
// no block is live).
type Closer interface {
	Close()
}

// Closed reports whether Close has been called.
func (d *Device) Closed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// ErrClosed is wrapped by the error of an Alloc on a closed device.
var ErrClosed = fmt.Errorf("device is closed")
