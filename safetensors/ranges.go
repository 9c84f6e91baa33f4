package safetensors

import (
	"fmt"
	"os"

	"github.com/headroom-ml/headroom/dtype"
)

// Ranges is a safetensors file opened to read parts of its tensors: the
// header is read and checked as Decode checks it (every entry, the sizes,
// the layout covering the file exactly), and the tensors' bytes stay on
// disk until ReadAt asks for a range of one. A data-parallel rank loads
// its shard of a model this way, reading its own elements only. The
// tensors' checksums cannot be verified from a part (a CRC-32C covers the
// whole tensor): ReadFile verifies them; the metadata's is verified.
type Ranges struct {
	file    *os.File
	path    string
	data    int64 // where the data after the header starts
	entries map[string]entry
	// Metadata is the header's metadata without the checksum keys.
	Metadata map[string]string
	// Read counts the tensor bytes ReadAt has read.
	Read int64
}

// OpenRanges opens the safetensors file at path for ReadAt. Close it.
func OpenRanges(path string) (*Ranges, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors.OpenRanges: %w", err)
	}
	r, err := openRanges(f, path)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("safetensors.OpenRanges %s: %w", path, err)
	}
	return r, nil
}

func openRanges(f *os.File, path string) (*Ranges, error) {
	h, size, err := readHeader(f)
	if err != nil {
		return nil, err
	}
	es, meta, err := parseHeader(h)
	if err != nil {
		return nil, err
	}
	data := 8 + int64(len(h))
	if err := checkLayout(es, int(size-data)); err != nil {
		return nil, err
	}
	md, err := verifiedMetadata(meta)
	if err != nil {
		return nil, err
	}
	r := &Ranges{file: f, path: path, data: data, entries: make(map[string]entry, len(es)), Metadata: md}
	for _, e := range es {
		r.entries[e.name] = e
	}
	return r, nil
}

// Tensor returns the dtype (dtype.Invalid for a kind the project has no
// dtype for), the kind and the shape of the tensor name; false when the
// file has no such tensor.
func (r *Ranges) Tensor(name string) (dtype.DType, string, []int, bool) {
	e, ok := r.entries[name]
	return e.kind.dt, e.kind.name, append([]int(nil), e.shape...), ok
}

// ReadAt reads bytes [off, off+len(dst)) of tensor name's data into dst.
func (r *Ranges) ReadAt(name string, dst []byte, off int64) error {
	e, ok := r.entries[name]
	switch {
	case !ok:
		return fmt.Errorf("safetensors: %s has no tensor %q", r.path, name)
	case off < 0 || off+int64(len(dst)) > int64(e.end-e.begin):
		return fmt.Errorf("safetensors: %s: bytes [%d, %d) of tensor %q, which has %d", r.path, off, off+int64(len(dst)), name, e.end-e.begin)
	}
	if _, err := r.file.ReadAt(dst, r.data+int64(e.begin)+off); err != nil {
		return fmt.Errorf("safetensors: %s: tensor %q: %w", r.path, name, err)
	}
	r.Read += int64(len(dst))
	return nil
}

// Close closes the file.
func (r *Ranges) Close() error { return r.file.Close() }
