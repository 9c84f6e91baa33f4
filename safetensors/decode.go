package safetensors

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// entry is one tensor as the header describes it.
type entry struct {
	name       string
	kind       kind
	shape      []int
	begin, end uint64
}

// Decode parses a whole safetensors file held in b. The tensors' Data
// slices point into b (capacity-limited, so appending to one cannot reach
// its neighbour); copy them to keep them past b's reuse.
//
// Everything is checked, following the reference implementation: the
// 8-byte header length (at most MaxHeaderSize and within b), the header
// (valid UTF-8; one JSON object, with only JSON white space around it;
// "__metadata__" an object of strings, or null; every other key a tensor
// {"dtype": a known type, "shape": [non-negative integers],
// "data_offsets": [begin, end]}), the size of each tensor (its shape's
// element count times its type's size, computed without overflow, equals
// end−begin), and the layout: ordered by offsets, the tensors must cover
// the bytes after the header exactly, with no gap and no overlap. Stricter
// than the reference, a key repeated anywhere in the header is an error
// (the reference keeps the last). Unknown fields of a tensor object are
// ignored, as the reference ignores them. Every error names what is wrong.
//
// Checksums (metadata keys starting with ChecksumPrefix) are verified
// before Decode returns: when the file has any, it must have one for every
// tensor and one for the metadata, and each must match the bytes; a
// mismatch is a *ChecksumError naming the tensor. A file without checksums
// (written by Python or by headroom before version 13) decodes unverified.
//
// The returned File lists Names in the order of the tensors' data (ties,
// possible only between empty tensors, keep the header's order); its
// Tensors carry both Kind and, where the project has one, DType; its
// Metadata is never nil and holds no checksum keys: those are in
// Checksums, which is nil for a file without them.
func Decode(b []byte) (*File, error) {
	f, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("safetensors.Decode: %w", err)
	}
	return f, nil
}

func decode(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("file of %d bytes is too short for the 8-byte header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if err := checkHeaderLength(n, int64(len(b))); err != nil {
		return nil, err
	}
	h, data := b[8:8+n], b[8+n:]
	es, meta, err := parseHeader(h)
	if err != nil {
		return nil, err
	}
	if err := checkLayout(es, len(data)); err != nil {
		return nil, err
	}
	f := &File{Names: make([]string, 0, len(es)), Tensors: make(map[string]Tensor, len(es)), Metadata: meta}
	if f.Metadata == nil {
		f.Metadata = map[string]string{}
	}
	for _, e := range es {
		f.Names = append(f.Names, e.name)
		f.Tensors[e.name] = Tensor{DType: e.kind.dt, Kind: e.kind.name, Shape: e.shape, Data: data[e.begin:e.end:e.end]}
	}
	if err := splitChecksums(f); err != nil {
		return nil, err
	}
	if err := verifyChecksums(f); err != nil {
		return nil, err
	}
	return f, nil
}

// checkLayout sorts the entries by their data offsets (ties keep the
// header's order) and checks each and that together they cover the size
// bytes of data that follow the header exactly.
func checkLayout(es []entry, size int) error {
	slices.SortStableFunc(es, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.begin, b.begin), cmp.Compare(a.end, b.end))
	})
	var pos uint64
	prev := ""
	for i, e := range es {
		if err := checkEntry(e, i == 0, pos, prev, size); err != nil {
			return err
		}
		pos, prev = e.end, e.name
	}
	if pos != uint64(size) {
		return fmt.Errorf("the tensors cover %d bytes, but %d bytes follow the header (%d unaccounted for)",
			pos, size, uint64(size)-pos)
	}
	return nil
}

// checkHeaderLength checks the header length n that a file of size bytes
// gives in its first 8 bytes.
func checkHeaderLength(n uint64, size int64) error {
	if n > MaxHeaderSize {
		return fmt.Errorf("header length %d is over the limit of %d (not a safetensors file?)", n, MaxHeaderSize)
	}
	if n > uint64(size-8) {
		return fmt.Errorf("header length %d runs past the end of the %d-byte file (truncated?)", n, size)
	}
	return nil
}

// checkEntry checks one tensor, given whether it is the first, where the
// previous one (prev) ended and the size of the data buffer.
func checkEntry(e entry, first bool, pos uint64, prev string, size int) error {
	where := fmt.Sprintf("tensor %q: data_offsets [%d, %d]", e.name, e.begin, e.end)
	switch {
	case e.end < e.begin:
		return fmt.Errorf("%s end before they begin", where)
	case e.begin < pos:
		return fmt.Errorf("%s overlap tensor %q, which ends at %d", where, prev, pos)
	case e.begin > pos && first:
		return fmt.Errorf("%s leave a gap: the first tensor must start at 0", where)
	case e.begin > pos:
		return fmt.Errorf("%s leave a gap after tensor %q, which ends at %d", where, prev, pos)
	}
	n, err := numBytes(e.shape, e.kind)
	if err != nil {
		return fmt.Errorf("tensor %q: %w", e.name, err)
	}
	if e.end-e.begin != uint64(n) {
		return fmt.Errorf("%s span %d bytes, but shape %v of %s needs %d",
			where, e.end-e.begin, e.shape, e.kind.name, n)
	}
	if e.end > uint64(size) {
		return fmt.Errorf("%s run past the %d bytes that follow the header (truncated?)", where, size)
	}
	return nil
}

// toInt converts a header integer to int.
func toInt(v uint64, what string) (int, error) {
	if v > math.MaxInt {
		return 0, fmt.Errorf("%s %d is too large", what, v)
	}
	return int(v), nil
}
