//go:build linux

package train

import "syscall"

// hostMemory returns the machine's physical memory in bytes (0: unknown).
func hostMemory() int64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
