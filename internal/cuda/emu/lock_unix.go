//go:build unix

package emu

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockCache takes an exclusive lock on the cache folder, so that test
// processes that start together build a set of sources once: the others
// wait, then find it built. The returned function releases the lock.
func lockCache(root string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(root, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("emu: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("emu: locking the cache: %w", err)
	}
	return func() { f.Close() }, nil // closing drops the lock
}
