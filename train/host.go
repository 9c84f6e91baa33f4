package train

import "github.com/headroom-ml/headroom/device"

// FitsHost returns nil when a program's host buffers of the given bytes
// (a batch's inputs, built in Go memory before they are copied to the
// device) fit in the machine's physical memory, else a *UsageError naming
// the flag: so a batch too large for the machine is refused before any
// work instead of ending in Go's unrecoverable "out of memory". On a system
// whose memory size is unknown it returns nil.
func FitsHost(flag string, value any, bytes float64) error {
	total := hostMemory()
	if total <= 0 || bytes <= float64(total) {
		return nil
	}
	return Usagef("--%s %v: its host buffers need %s, more than this machine's %s of memory", flag, value,
		device.FormatBytes(int64(min(bytes, 1<<62))), device.FormatBytes(total))
}
