package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// idxBytes encodes an unsigned-byte IDX file by the published layout.
func idxBytes(dims []int, data []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 0x08, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	b.Write(data)
	return b.Bytes()
}

func gzipBytes(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	if _, err := z.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeFile(t testing.TB, dir, name string, b []byte) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadIDXFile(t *testing.T) {
	dir := t.TempDir()
	data := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255}
	raw := idxBytes([]int{3, 2, 2}, data)
	for name, contents := range map[string][]byte{"raw": raw, "gz": gzipBytes(t, raw)} {
		p := writeFile(t, dir, name, contents)
		dims, got, err := readIDXFile(p)
		if err != nil {
			t.Fatalf("readIDXFile(%s): %v", name, err)
		}
		if !slices.Equal(dims, []int{3, 2, 2}) || !bytes.Equal(got, data) {
			t.Errorf("readIDXFile(%s) = %v, %v; want [3 2 2], %v", name, dims, got, data)
		}
	}
	// A one-dimensional file (labels): magic 0x00000801.
	p := writeFile(t, dir, "labels", []byte{0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9})
	dims, got, err := readIDXFile(p)
	if err != nil || !slices.Equal(dims, []int{3}) || !bytes.Equal(got, []byte{7, 8, 9}) {
		t.Errorf("readIDXFile(labels) = %v, %v, %v; want [3], [7 8 9], nil", dims, got, err)
	}
}

func TestReadIDXErrors(t *testing.T) {
	good := idxBytes([]int{2, 3}, []byte{1, 2, 3, 4, 5, 6})
	gz := gzipBytes(t, good)
	badCRC := slices.Clone(gz)
	badCRC[len(badCRC)-6] ^= 0xff // the CRC-32 in the gzip trailer
	cases := []struct {
		name     string
		contents []byte
		want     string
	}{
		{"empty", nil, "magic number: file ends early"},
		{"short magic", []byte{0, 0}, "magic number: file ends early"},
		{"not idx", []byte("PK\x03\x04 a zip file"), "does not start with two zero bytes"},
		{"float type", []byte{0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0}, "element type 0x0d, want 0x08"},
		{"no dims", []byte{0, 0, 8, 0}, "declares 0 dimensions"},
		{"nine dims", []byte{0, 0, 8, 9}, "declares 9 dimensions"},
		{"short dims", []byte{0, 0, 8, 3, 0, 0, 0, 2, 0, 0}, "reading 3 dimension sizes: file ends early"},
		{"zero dim", idxBytes([]int{2, 0}, nil), "dimension 1 of 2×0 is 0"},
		{"huge dims", idxBytes([]int{1 << 30, 1 << 30}, nil), "declare more than"},
		{"truncated", good[:len(good)-2], "truncated: dimensions 2×3 need 6 data bytes, found 4"},
		{"extra", append(slices.Clone(good), 7), "more data than dimensions 2×3 declare (6 bytes)"},
		{"gz truncated", gz[:len(gz)-12], "file ends early"},
		{"gz bad checksum", badCRC, "checksum"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		p := writeFile(t, dir, strings.ReplaceAll(c.name, " ", "_"), c.contents)
		_, _, err := readIDXFile(p)
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Errorf("%s: readIDXFile error = %v, want a *FormatError", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q, want it to name %s and say %q", c.name, err, p, c.want)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// FuzzReadIDX checks that any input either parses into data of exactly the
// declared size or gives an error, and never panics.
func FuzzReadIDX(f *testing.F) {
	f.Add(idxBytes([]int{2, 3}, []byte{1, 2, 3, 4, 5, 6}))
	f.Add(idxBytes([]int{1}, []byte{9}))
	f.Add(gzipBytes(f, idxBytes([]int{2, 2}, []byte{1, 2, 3, 4})))
	f.Add([]byte{0, 0, 8, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := maybeGunzip(bytes.NewReader(b))
		if err != nil {
			return
		}
		dims, data, err := readIDX(r)
		if err != nil {
			return
		}
		n := 1
		for _, d := range dims {
			if d <= 0 {
				t.Fatalf("dims %v has a non-positive size", dims)
			}
			n *= d
		}
		if len(data) != n {
			t.Fatalf("dims %v but %d data bytes", dims, len(data))
		}
	})
}
