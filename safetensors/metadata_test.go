package safetensors_test

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/headroom-ml/headroom/safetensors"
)

// encoded returns f's bytes.
func encoded(tb testing.TB, f *safetensors.File) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := safetensors.Encode(&b, f); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// TestReadMetadata: the header alone gives the metadata Decode gives, a
// changed metadata byte is a *ChecksumError, and a changed tensor byte —
// which only ReadFile reads — is not ReadMetadata's business.
func TestReadMetadata(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.safetensors")
	good := encoded(t, checked())
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	md, err := safetensors.ReadMetadata(path)
	if err != nil || !maps.Equal(md, map[string]string{"step": "123"}) {
		t.Fatalf("ReadMetadata = %v, %v; want the one key step=123", md, err)
	}
	bad := bytes.Replace(good, []byte(`"step":"123"`), []byte(`"step":"124"`), 1)
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	var ce *safetensors.ChecksumError
	if _, err := safetensors.ReadMetadata(path); !errors.As(err, &ce) || ce.Tensor != safetensors.MetadataKey {
		t.Errorf("ReadMetadata of a changed metadata value = %v, want a *ChecksumError of the metadata", err)
	}
	data := bytes.Clone(good)
	data[len(data)-1] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := safetensors.ReadMetadata(path); err != nil {
		t.Errorf("ReadMetadata with a changed tensor byte = %v, want the metadata (its checksum holds)", err)
	}
	if _, err := safetensors.ReadMetadata(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadMetadata of a missing file = %v, want fs.ErrNotExist", err)
	}
}

// FuzzReadMetadata reads arbitrary bytes as a file's header: ReadMetadata
// never panics, and whenever Decode accepts the whole file it returns
// Decode's metadata.
func FuzzReadMetadata(f *testing.F) {
	f.Add(encoded(f, checked()))
	plain := checked()
	plain.Checksums = nil
	f.Add(encoded(f, plain))
	f.Add([]byte{4, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '})
	f.Add([]byte{255, 255, 255, 255, 0, 0, 0, 0})
	path := filepath.Join(f.TempDir(), "f.safetensors")
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		md, err := safetensors.ReadMetadata(path)
		whole, derr := safetensors.Decode(b)
		if derr != nil {
			return
		}
		if err != nil || !maps.Equal(md, whole.Metadata) {
			t.Fatalf("Decode accepts the file with metadata %v, ReadMetadata gives %v, %v", whole.Metadata, md, err)
		}
	})
}
