package safetensors_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/safetensors"
)

// FuzzDecode checks that Decode never panics and that whatever it accepts
// encodes and decodes back to the same File, and that this encoding is a
// fixed point (encoding the decoded copy gives the same bytes). The seed
// corpus is in testdata/fuzz/FuzzDecode: valid files in the reference
// layout, empty and scalar tensors, every malformed variant that tests
// reject, and inputs the fuzzer found.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		first, err := safetensors.Decode(b)
		if err != nil {
			if first != nil {
				t.Fatalf("Decode returned a File and an error: %v", err)
			}
			return
		}
		var enc bytes.Buffer
		if err := safetensors.Encode(&enc, first); err != nil {
			t.Fatalf("Encode of a decoded file: %v", err)
		}
		second, err := safetensors.Decode(enc.Bytes())
		if err != nil {
			t.Fatalf("Decode of the re-encoded file: %v\n%q", err, enc.Bytes())
		}
		if d := diff(first, second); d != "" {
			t.Fatalf("re-encoded file differs: %s", d)
		}
		var again bytes.Buffer
		if err := safetensors.Encode(&again, second); err != nil || !bytes.Equal(again.Bytes(), enc.Bytes()) {
			t.Fatalf("encoding is not a fixed point (%v)", err)
		}
	})
}

// The seed corpus holds what its names say: valid_* files decode, bad_*
// files do not.
func TestFuzzCorpus(t *testing.T) {
	paths, err := filepath.Glob("testdata/fuzz/FuzzDecode/*")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(text)), "\n")
		if len(lines) != 2 || lines[0] != "go test fuzz v1" ||
			!strings.HasPrefix(lines[1], "[]byte(") || !strings.HasSuffix(lines[1], ")") {
			t.Fatalf("%s: not a go test fuzz v1 file of one []byte", p)
		}
		b, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		_, err = safetensors.Decode([]byte(b))
		name := filepath.Base(p)
		switch {
		case strings.HasPrefix(name, "valid_") && err != nil:
			t.Errorf("%s: %v", name, err)
		case strings.HasPrefix(name, "bad_") && err == nil:
			t.Errorf("%s: decoded without error", name)
		}
		t.Logf("%s: %d bytes, error %v", name, len(b), err)
	}
}
