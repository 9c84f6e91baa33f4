package safetensors

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// ReadFile reads and decodes the safetensors file at path (see Decode).
// Errors wrap the file system's (errors.Is(err, fs.ErrNotExist) works).
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors.ReadFile: %w", err)
	}
	f, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("safetensors.ReadFile %s: %w", path, err)
	}
	return f, nil
}

// WriteFile encodes f (see Encode) into the file at path, atomically: f is
// checked completely first; the bytes go to a new temporary file in the
// same directory (named ".<name>.tmp…"), which is flushed to stable storage
// (fsync) and then renamed over path; the directory is fsynced last so the
// rename itself survives a crash. Readers see the old file or the new one,
// never a mixture. On any failure before the rename, path is untouched
// and the temporary file is removed. The new file keeps the permissions of
// the file it replaces, or gets 0644.
func WriteFile(path string, f *File) error {
	h, err := header(f)
	if err != nil {
		return fmt.Errorf("safetensors.WriteFile %s: %w", path, err)
	}
	err = atomicWrite(path, func(w io.Writer) error { return write(w, h, f) })
	if err != nil {
		return fmt.Errorf("safetensors.WriteFile %s: %w", path, err)
	}
	return nil
}

// atomicWrite writes what fill writes to path through a synced temporary
// file renamed over it.
func atomicWrite(path string, fill func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" {
		return errors.New("path names a directory")
	}
	perm := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		perm = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err := fill(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	renamed = true
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("written, but syncing directory %s failed: %w", dir, err)
	}
	return nil
}

// syncDir flushes a directory's entries to stable storage. Windows cannot
// open a directory for syncing, so there it does nothing.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}
