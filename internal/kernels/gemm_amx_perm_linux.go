//go:build !noasm && amd64 && linux

package kernels

import (
	"syscall"
	"unsafe"
)

// amxPermit asks Linux, once per process, for leave to use the AMX tile
// data state (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA) and
// reports whether the permission is now held (ARCH_GET_XCOMP_PERM).
// Without it the first tile instruction raises SIGILL. The permission is
// process-wide and is never given back.
func amxPermit() bool {
	const getPerm, reqPerm, xtiledata = 0x1022, 0x1023, 18
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, reqPerm, xtiledata, 0); e != 0 {
		return false
	}
	var mask uint64
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, getPerm, uintptr(unsafe.Pointer(&mask)), 0); e != 0 {
		return false
	}
	return mask&(1<<xtiledata) != 0
}
