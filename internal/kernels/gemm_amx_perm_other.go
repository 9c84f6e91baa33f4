//go:build !noasm && amd64 && !linux

package kernels

// amxPermit: only Linux is asked for the tile state here; elsewhere AMX
// is not used.
func amxPermit() bool { return false }
