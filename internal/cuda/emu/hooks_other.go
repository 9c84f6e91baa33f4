//go:build !unix

package emu

import "errors"

var errNoUnix = errors.New("emu: the fake libraries load only on a unix host (Linux)")

// SetMemory sets the emulated devices' total memory; see the unix version.
// Here it fails: the emulator runs only on Linux.
func (l Libs) SetMemory(bytes int64) error { return errNoUnix }

// GemmsWithoutWorkspace counts GEMMs run with no workspace; see the unix
// version. Here it fails: the emulator runs only on Linux.
func (l Libs) GemmsWithoutWorkspace() (int64, error) { return 0, errNoUnix }
