package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// FuzzOpenRanges checks that OpenRanges never panics on any file, that
// whatever Decode accepts OpenRanges accepts too with every tensor's
// bytes, read whole and in two parts, equal to Decode's, and that a read
// past a tensor's end is an error.
func FuzzOpenRanges(f *testing.F) {
	valid := &File{Tensors: map[string]Tensor{
		"a": {DType: dtype.F32, Shape: []int{2}, Data: []byte("abcdefgh")},
		"b": {DType: dtype.BF16, Shape: []int{1, 3}, Data: []byte("012345")},
	}}
	valid.Sort()
	var enc bytes.Buffer
	if err := Encode(&enc, valid); err != nil {
		f.Fatal(err)
	}
	f.Add(enc.Bytes())
	f.Add(enc.Bytes()[:enc.Len()-1])
	f.Add(enc.Bytes()[:12])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "f.safetensors")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		r, rerr := OpenRanges(path)
		whole, derr := Decode(b)
		if rerr != nil {
			if derr == nil {
				t.Fatalf("Decode accepts the file, OpenRanges does not: %v", rerr)
			}
			return
		}
		defer r.Close()
		if derr != nil {
			return // Decode checks more (checksums, metadata) than ranges need
		}
		for name, tn := range whole.Tensors {
			got := make([]byte, len(tn.Data))
			half := len(got) / 2
			if err := r.ReadAt(name, got[:half], 0); err != nil {
				t.Fatalf("ReadAt %q [0, %d): %v", name, half, err)
			}
			if err := r.ReadAt(name, got[half:], int64(half)); err != nil {
				t.Fatalf("ReadAt %q [%d, %d): %v", name, half, len(got), err)
			}
			if !bytes.Equal(got, tn.Data) {
				t.Fatalf("tensor %q: ReadAt %q, Decode %q", name, got, tn.Data)
			}
			if err := r.ReadAt(name, make([]byte, 1), int64(len(got))); err == nil {
				t.Fatalf("tensor %q: a read past its %d bytes succeeded", name, len(got))
			}
		}
	})
}
