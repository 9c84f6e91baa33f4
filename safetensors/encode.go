package safetensors

import (
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Encode writes f to w in the safetensors format: the header's length as
// an 8-byte little-endian integer, the header (compact JSON, padded with
// spaces to a multiple of 8 bytes), then each tensor's Data in f.Names
// order with no gaps. The header lists "__metadata__" first (when
// f.Metadata is not empty, keys sorted), then the tensors in f.Names order,
// each as {"dtype":…,"shape":[…],"data_offsets":[begin,end]}; strings are
// escaped as the reference writer (serde_json) escapes them. Call f.Sort
// first for the reference writer's order and byte-identical output.
//
// Everything is checked before the first byte is written: f.Names must list
// every key of f.Tensors exactly once, names and metadata must be valid
// UTF-8, no tensor may be named "__metadata__", each tensor's type must be
// known (see Tensor) and len(Data) must equal the size its shape and type
// give; no metadata key may start with ChecksumPrefix; and f.Checksums,
// when not empty, must hold a checksum for every tensor and the metadata
// and nothing else, each matching (see File.SetChecksums). The checksums
// are written into the metadata, sorted with its other keys. An error from
// w is returned as is, wrapped.
func Encode(w io.Writer, f *File) error {
	h, err := header(f)
	if err != nil {
		return fmt.Errorf("safetensors.Encode: %w", err)
	}
	if err := write(w, h, f); err != nil {
		return fmt.Errorf("safetensors.Encode: %w", err)
	}
	return nil
}

// write writes the length prefix, the prepared header h and the data.
func write(w io.Writer, h []byte, f *File) error {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(h)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(h); err != nil {
		return err
	}
	for _, name := range f.Names {
		if _, err := w.Write(f.Tensors[name].Data); err != nil {
			return err
		}
	}
	return nil
}

// header validates f and returns its padded header.
func header(f *File) ([]byte, error) {
	if f == nil {
		return nil, errNilFile
	}
	if len(f.Names) != len(f.Tensors) {
		return nil, fmt.Errorf("Names lists %d names but Tensors holds %d tensors (File.Sort sets Names)",
			len(f.Names), len(f.Tensors))
	}
	var ts []byte
	seen := make(map[string]bool, len(f.Names))
	off := 0
	for i, name := range f.Names {
		t, ok := f.Tensors[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("Names[%d] %q is not in Tensors", i, name)
		case seen[name]:
			return nil, fmt.Errorf("Names lists %q twice", name)
		case name == metadataKey:
			return nil, fmt.Errorf("a tensor may not be named %q", metadataKey)
		case !utf8.ValidString(name):
			return nil, fmt.Errorf("tensor name %q is not valid UTF-8", name)
		}
		seen[name] = true
		var err error
		if ts, off, err = appendEntry(ts, name, t, off); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
	}
	b, err := appendMetadata([]byte{'{'}, f)
	if err != nil {
		return nil, err
	}
	if len(b) > 1 && len(ts) > 0 {
		b = append(b, ',')
	}
	b = append(append(b, ts...), '}')
	for len(b)%8 != 0 {
		b = append(b, ' ')
	}
	if len(b) > MaxHeaderSize {
		return nil, fmt.Errorf("header of %d bytes is over the limit of %d", len(b), MaxHeaderSize)
	}
	return b, nil
}

// appendEntry appends tensor t's header member, its data starting at byte
// off of the data part, and returns where the next tensor starts.
func appendEntry(b []byte, name string, t Tensor, off int) ([]byte, int, error) {
	k, _, err := t.resolve()
	if err != nil {
		return nil, 0, err
	}
	n, err := numBytes(t.Shape, k)
	if err != nil {
		return nil, 0, err
	}
	if len(t.Data) != n {
		return nil, 0, fmt.Errorf("%d bytes of data, but shape %v of %s needs %d", len(t.Data), t.Shape, k.name, n)
	}
	if len(b) > 0 {
		b = append(b, ',')
	}
	b = appendString(b, name)
	b = append(b, `:{"dtype":`...)
	b = appendString(b, k.name)
	b = append(b, `,"shape":[`...)
	for j, d := range t.Shape {
		if j > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(d), 10)
	}
	b = append(b, `],"data_offsets":[`...)
	b = strconv.AppendInt(b, int64(off), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(off+n), 10)
	return append(b, "]}"...), off + n, nil
}

// appendMetadata appends the "__metadata__" member for f's metadata and
// checksums, when there are any, keys sorted. It checks the metadata (valid
// UTF-8, no reserved key) and the checksums (complete and matching).
func appendMetadata(b []byte, f *File) ([]byte, error) {
	md := f.Metadata
	for _, k := range slices.Sorted(maps.Keys(md)) {
		if v := md[k]; !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, fmt.Errorf("metadata %q: %q: not valid UTF-8", k, v)
		}
		if strings.HasPrefix(k, ChecksumPrefix) {
			return nil, fmt.Errorf("metadata key %q: the prefix %q is reserved for File.Checksums", k, ChecksumPrefix)
		}
	}
	if len(f.Checksums) > 0 {
		if err := verifyChecksums(f); err != nil {
			return nil, fmt.Errorf("%w (call File.SetChecksums after changing the data or metadata)", err)
		}
		md = maps.Clone(md)
		if md == nil {
			md = map[string]string{}
		}
		for name, sum := range f.Checksums {
			md[ChecksumPrefix+name] = fmt.Sprintf("%08x", sum)
		}
	}
	if len(md) == 0 {
		return b, nil
	}
	b = appendString(b, metadataKey)
	b = append(b, ":{"...)
	for i, k := range slices.Sorted(maps.Keys(md)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, md[k])
	}
	return append(b, '}'), nil
}

// appendString appends s as a JSON string escaped the way serde_json
// escapes it: quote and backslash with a backslash; backspace, form feed,
// newline, carriage return and tab as \b \f \n \r \t; other control
// characters as \u00xx (lower-case hex); everything else as is.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
