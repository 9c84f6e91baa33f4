package safetensors

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ChecksumPrefix begins the metadata keys that hold checksums: the key of
// tensor "fc.weight" is "headroom.crc32c.fc.weight" (its Tensor.Checksum),
// and the key "headroom.crc32c.__metadata__" holds the checksum of the
// other metadata (MetadataSum). Each value is a CRC-32C (Castagnoli) as 8
// lower-case hexadecimal digits ("1a2b3c4d"). The prefix is reserved:
// Decode moves such keys from the metadata to File.Checksums, and Encode
// refuses them in File.Metadata.
const ChecksumPrefix = "headroom.crc32c."

// MetadataKey is the header's key of the metadata object, and the
// File.Checksums key of the metadata's checksum (no tensor may have this
// name).
const MetadataKey = metadataKey

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C (Castagnoli polynomial, as iSCSI, ext4 and
// Python's crc32c package compute it) of the tensor's element type and
// shape written as text, such as "F32[4,3]" ("I64[]" for a scalar),
// followed by its Data: a flipped byte in the data, or a type or shape that
// changed in the header, changes it. In Python:
//
//	crc32c(f"{dtype}[{','.join(map(str, shape))}]".encode() + data)
//
// The type is Kind, or DType's name when Kind is empty.
func (t Tensor) Checksum() uint32 {
	k := t.Kind
	if k == "" {
		k = KindOf(t.DType)
	}
	b := append([]byte(k), '[')
	for i, d := range t.Shape {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(d), 10)
	}
	b = append(b, ']')
	return crc32.Update(crc32.Checksum(b, castagnoli), castagnoli, t.Data)
}

// MetadataSum returns the checksum of metadata md, leaving out the keys
// that start with ChecksumPrefix: the CRC-32C of, for each other key in
// byte order, the key's length as an 8-byte little-endian integer, the
// key, the value's length the same way, and the value. In Python, with md
// the metadata less those keys:
//
//	crc32c(b"".join(pack("<Q", len(k)) + k + pack("<Q", len(v)) + v
//	       for k, v in sorted((k.encode(), v.encode()) for k, v in md.items())))
func MetadataSum(md map[string]string) uint32 {
	var crc uint32
	var n [8]byte
	for _, k := range slices.Sorted(maps.Keys(md)) {
		if strings.HasPrefix(k, ChecksumPrefix) {
			continue
		}
		for _, s := range []string{k, md[k]} {
			binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
			crc = crc32.Update(crc, castagnoli, n[:])
			crc = crc32.Update(crc, castagnoli, []byte(s))
		}
	}
	return crc
}

// SetChecksums sets f.Checksums to every tensor's checksum and the
// metadata's, so that Encode writes them and Decode verifies them. Call it
// again after changing any tensor or the metadata. It reads each tensor's
// Data once and copies nothing.
func (f *File) SetChecksums() {
	f.Checksums = make(map[string]uint32, len(f.Tensors)+1)
	for name, t := range f.Tensors {
		f.Checksums[name] = t.Checksum()
	}
	f.Checksums[MetadataKey] = MetadataSum(f.Metadata)
}

// ChecksumError reports a tensor, or the metadata, whose bytes do not have
// the checksum the file stores for them: the file is corrupt.
type ChecksumError struct {
	// Tensor names the tensor, or is MetadataKey for the metadata.
	Tensor string
	// Stored is the checksum in the header, Computed the one of what the
	// file holds.
	Stored, Computed uint32
}

func (e *ChecksumError) Error() string {
	what := fmt.Sprintf("tensor %q: its type, shape and data have", e.Tensor)
	if e.Tensor == MetadataKey {
		what = "the metadata has"
	}
	return fmt.Sprintf("%s CRC-32C %08x, the header stores %08x: the file is corrupt", what, e.Computed, e.Stored)
}

// splitChecksums moves the checksum keys of f.Metadata to f.Checksums
// (nil when there are none), parsing their values.
func splitChecksums(f *File) error {
	for k, v := range f.Metadata {
		name, ok := strings.CutPrefix(k, ChecksumPrefix)
		if !ok {
			continue
		}
		sum, err := strconv.ParseUint(v, 16, 32)
		if err != nil || len(v) != 8 || strings.ToLower(v) != v {
			return fmt.Errorf("metadata %q = %q: want a CRC-32C as 8 lower-case hexadecimal digits", k, v)
		}
		if f.Checksums == nil {
			f.Checksums = map[string]uint32{}
		}
		f.Checksums[name] = uint32(sum)
		delete(f.Metadata, k)
	}
	return nil
}

// verifyChecksums checks f.Checksums against f's bytes: none at all is
// fine (the file is unverified); otherwise there must be one for every
// tensor and the metadata, none for anything else, and each must match.
// Tensors are checked in f.Names order, so the first corrupt one in the
// file is the one named.
func verifyChecksums(f *File) error {
	if len(f.Checksums) == 0 {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(f.Checksums)) {
		if _, ok := f.Tensors[name]; !ok && name != MetadataKey {
			return fmt.Errorf("metadata %q is the checksum of a tensor %q the file does not hold",
				ChecksumPrefix+name, name)
		}
	}
	names := append(slices.Clone(f.Names), MetadataKey)
	for _, name := range names {
		if _, ok := f.Checksums[name]; !ok {
			what := fmt.Sprintf("tensor %q has", name)
			if name == MetadataKey {
				what = "the metadata has"
			}
			return fmt.Errorf("the header holds checksums, but %s none (%s%s): a file with checksums must cover every tensor and the metadata",
				what, ChecksumPrefix, name)
		}
	}
	if got, want := MetadataSum(f.Metadata), f.Checksums[MetadataKey]; got != want {
		return &ChecksumError{Tensor: MetadataKey, Stored: want, Computed: got}
	}
	for _, name := range f.Names {
		if got, want := f.Tensors[name].Checksum(), f.Checksums[name]; got != want {
			return &ChecksumError{Tensor: name, Stored: want, Computed: got}
		}
	}
	return nil
}
