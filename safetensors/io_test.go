package safetensors

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

func sample(v byte) *File {
	f := &File{Metadata: map[string]string{"version": string('0' + v)}, Tensors: map[string]Tensor{
		"w": {DType: dtype.F32, Shape: []int{2, 2}, Data: bytes.Repeat([]byte{v}, 16)},
		"n": {Kind: "U8", Shape: []int{3}, Data: []byte{v, v, v}},
	}}
	f.Sort()
	return f
}

// dirNames lists a directory's entries.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteFileReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	for v := byte(1); v <= 2; v++ { // create, then replace
		if err := WriteFile(path, sample(v)); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want := sample(v)
		if !slices.Equal(got.Names, want.Names) || got.Metadata["version"] != want.Metadata["version"] ||
			!bytes.Equal(got.Tensors["w"].Data, want.Tensors["w"].Data) {
			t.Errorf("round %d: read %+v, want %+v", v, got, want)
		}
		var enc bytes.Buffer
		if err := Encode(&enc, want); err != nil {
			t.Fatal(err)
		}
		if disk, _ := os.ReadFile(path); !bytes.Equal(disk, enc.Bytes()) {
			t.Errorf("round %d: file differs from Encode's bytes", v)
		}
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"m.safetensors"}) {
		t.Errorf("directory holds %v, want only the file", names)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", fi.Mode(), err)
	}
	// A replaced file keeps its permissions.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, sample(3)); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after replacing a 0600 file: %v", fi.Mode())
	}
	if _, err := ReadFile(filepath.Join(dir, "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(absent) = %v, want fs.ErrNotExist", err)
	}
	os.WriteFile(filepath.Join(dir, "junk"), []byte("not a safetensors file at all"), 0o644)
	if _, err := ReadFile(filepath.Join(dir, "junk")); err == nil || !strings.Contains(err.Error(), "junk: header length") {
		t.Errorf("ReadFile(junk) = %v", err)
	}
}

// Each way WriteFile can fail leaves the old file byte for byte and no
// temporary file behind.
func TestWriteFileFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	if err := WriteFile(path, sample(1)); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)
	check := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", what, err, want)
		}
		t.Logf("%s: %v", what, err)
		if now, rerr := os.ReadFile(path); rerr != nil || !bytes.Equal(now, old) {
			t.Errorf("%s: old file changed (%v)", what, rerr)
		}
		if names := dirNames(t, dir); !slices.Equal(names, []string{"m.safetensors"}) {
			t.Errorf("%s: directory holds %v", what, names)
		}
	}

	// Rejected before anything is written: data that disagrees with its shape.
	bad := sample(2)
	bad.Tensors["w"] = Tensor{DType: dtype.F32, Shape: []int{2, 2}, Data: make([]byte, 15)}
	check("short data", WriteFile(path, bad), `tensor "w": 15 bytes of data, but shape [2 2] of F32 needs 16`)

	// Fails in the middle of writing the data.
	boom := errors.New("disk on fire")
	check("failing writer", atomicWrite(path, func(w io.Writer) error {
		w.Write(bytes.Repeat([]byte{9}, 100))
		return boom
	}), "disk on fire")

	// Fails at the rename: the target is now a directory (kept as is).
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sub, "keep"), []byte("x"), 0o644)
	err := WriteFile(sub, sample(2))
	if err == nil {
		t.Errorf("WriteFile over a directory succeeded")
	}
	if names := dirNames(t, sub); !slices.Equal(names, []string{"keep"}) {
		t.Errorf("directory now holds %v", names)
	}
	os.RemoveAll(sub)
	check("rename over a directory", err, "sub")

	// The directory does not exist.
	if err := WriteFile(filepath.Join(dir, "no", "m.safetensors"), sample(2)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("WriteFile in a missing directory = %v", err)
	}

	// A read-only directory (only meaningful when not running as root).
	if os.Geteuid() != 0 {
		os.Chmod(dir, 0o555)
		check("read-only directory", WriteFile(path, sample(2)), "permission denied")
		os.Chmod(dir, 0o755)
	} else {
		t.Logf("running as root: read-only directory case skipped")
	}
}
