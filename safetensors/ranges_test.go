package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestRangesReadParts writes a file with checksums and reads parts of its
// tensors through Ranges: each part equals the same bytes of ReadFile's
// tensor, Read counts exactly the bytes asked for, and a range past a
// tensor, a missing tensor and a truncated file are errors.
func TestRangesReadParts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.safetensors")
	f := &File{Metadata: map[string]string{"k": "v"}, Tensors: map[string]Tensor{
		"a": {DType: dtype.F32, Shape: []int{2, 3}, Data: []byte("abcdefghijklmnopqrstuvwx")},
		"b": {DType: dtype.BF16, Shape: []int{4}, Data: []byte("01234567")},
	}}
	f.Sort()
	f.SetChecksums()
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	whole, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenRanges(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if dt, kind, shape, ok := r.Tensor("a"); !ok || dt != dtype.F32 || kind != "F32" || !slices.Equal(shape, []int{2, 3}) {
		t.Errorf("Tensor(a) = %v %q %v %v", dt, kind, shape, ok)
	}
	if r.Metadata["k"] != "v" || len(r.Metadata) != 1 {
		t.Errorf("metadata %v, want only k: v", r.Metadata)
	}
	var asked int64
	for _, p := range []struct {
		name   string
		off, n int
	}{{"a", 0, 24}, {"a", 5, 7}, {"b", 6, 2}, {"b", 0, 1}} {
		got := make([]byte, p.n)
		if err := r.ReadAt(p.name, got, int64(p.off)); err != nil {
			t.Fatal(err)
		}
		asked += int64(p.n)
		if want := whole.Tensors[p.name].Data[p.off : p.off+p.n]; !bytes.Equal(got, want) {
			t.Errorf("%s [%d, %d): %q, want %q", p.name, p.off, p.off+p.n, got, want)
		}
	}
	if r.Read != asked {
		t.Errorf("Read %d, want %d", r.Read, asked)
	}
	for _, c := range []struct {
		name string
		off  int64
		n    int
		want string
	}{{"b", 7, 2, "bytes [7, 9) of tensor \"b\", which has 8"}, {"c", 0, 1, "has no tensor \"c\""}, {"a", -1, 1, "bytes [-1, 0)"}} {
		if err := r.ReadAt(c.name, make([]byte, c.n), c.off); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadAt(%s, %d, %d): %v, want an error with %q", c.name, c.off, c.n, err, c.want)
		}
	}
	b, _ := os.ReadFile(path)
	short := filepath.Join(t.TempDir(), "short.safetensors")
	os.WriteFile(short, b[:len(b)-1], 0o644)
	if _, err := OpenRanges(short); err == nil || !strings.Contains(err.Error(), "run past") {
		t.Errorf("truncated file: %v, want its layout error", err)
	}
}
