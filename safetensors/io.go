package safetensors

import (
	"bufio"
	"encoding/binary"
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

// ReadMetadata reads the metadata of the safetensors file at path from its
// header alone, without reading its tensors: the header is checked as
// Decode checks it, the checksum keys are left out, and when the file has
// checksums the metadata's own is verified (a mismatch is a
// *ChecksumError). The tensors' checksums are not: ReadFile verifies them.
func ReadMetadata(path string) (map[string]string, error) {
	md, err := readMetadata(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors.ReadMetadata %s: %w", path, err)
	}
	return md, nil
}

func readMetadata(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, _, err := readHeader(f)
	if err != nil {
		return nil, err
	}
	_, meta, err := parseHeader(h)
	if err != nil {
		return nil, err
	}
	return verifiedMetadata(meta)
}

// verifiedMetadata returns a header's metadata without its checksum keys
// (empty for none), after verifying the metadata's own checksum when the
// file has checksums.
func verifiedMetadata(meta map[string]string) (map[string]string, error) {
	file := &File{Metadata: meta}
	if file.Metadata == nil {
		file.Metadata = map[string]string{}
	}
	if err := splitChecksums(file); err != nil {
		return nil, err
	}
	if want, ok := file.Checksums[MetadataKey]; ok {
		if got := MetadataSum(file.Metadata); got != want {
			return nil, &ChecksumError{Tensor: MetadataKey, Stored: want, Computed: got}
		}
	}
	return file.Metadata, nil
}

// readHeader reads the header of the open file f and returns it and the
// file's size.
func readHeader(f *os.File) ([]byte, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	var n [8]byte
	if _, err := io.ReadFull(f, n[:]); err != nil {
		return nil, 0, fmt.Errorf("file of %d bytes is too short for the 8-byte header length", fi.Size())
	}
	size := binary.LittleEndian.Uint64(n[:])
	if err := checkHeaderLength(size, fi.Size()); err != nil {
		return nil, 0, err
	}
	h := make([]byte, size)
	if _, err := io.ReadFull(f, h); err != nil {
		return nil, 0, err
	}
	return h, fi.Size(), nil
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
