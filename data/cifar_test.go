package data

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cifarFile builds n CIFAR-10 binary records: record r's label is
// (first+r) mod 10 and its pixel (c, y, x) is (first + r + c + y + x) mod 256,
// written channel-major as the format prescribes.
func cifarFile(first, n int) []byte {
	var b []byte
	for r := range n {
		b = append(b, byte((first+r)%10))
		for c := range 3 {
			for y := range 32 {
				for x := range 32 {
					b = append(b, byte(first+r+c+y+x))
				}
			}
		}
	}
	return b
}

// writeCIFAR writes the six batch files, per files records each.
func writeCIFAR(t *testing.T, dir string, per int) {
	for i, name := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"} {
		writeFile(t, dir, name, cifarFile(i*per, per))
	}
}

func TestLoadCIFAR10(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "cifar-10-batches-bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeCIFAR(t, dir, 3)
	for _, d := range []string{dir, root} { // the folder itself or its parent
		train, test, err := LoadCIFAR10(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			set         *Images
			n, firstRec int
		}{{train, 15, 0}, {test, 3, 15}} {
			m := c.set
			if m.N != c.n || m.C != 3 || m.H != 32 || m.W != 32 || m.Classes != 10 {
				t.Fatalf("N=%d C=%d H=%d W=%d classes=%d, want N=%d 3×32×32, 10 classes", m.N, m.C, m.H, m.W, m.Classes, c.n)
			}
			for i := range m.N {
				rec := c.firstRec + i // files are concatenated in order
				if int(m.Labels[i]) != rec%10 {
					t.Fatalf("label %d = %d, want %d", i, m.Labels[i], rec%10)
				}
				for _, p := range [][3]int{{0, 0, 0}, {0, 0, 31}, {1, 5, 7}, {2, 31, 31}} {
					ch, y, x := p[0], p[1], p[2]
					got := m.Pixels[((i*3+ch)*32+y)*32+x]
					if want := byte(rec + ch + y + x); got != want {
						t.Fatalf("image %d pixel (%d,%d,%d) = %d, want %d", i, ch, y, x, got, want)
					}
				}
			}
		}
	}
}

func TestLoadCIFAR10Errors(t *testing.T) {
	_, _, err := LoadCIFAR10("")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), CIFAR10URL) {
		t.Errorf(`LoadCIFAR10("") error = %v, want fs.ErrNotExist naming %s`, err, CIFAR10URL)
	}
	dir := t.TempDir()
	writeFile(t, dir, "data_batch_1.bin", cifarFile(0, 1))
	_, _, err = LoadCIFAR10(dir)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LoadCIFAR10 with missing files: error = %v, want fs.ErrNotExist", err)
	}
	for _, want := range []string{"data_batch_2.bin, data_batch_3.bin, data_batch_4.bin, data_batch_5.bin, test_batch.bin", CIFAR10URL, "--data DIR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Logf("%v", err)

	for _, c := range []struct {
		name     string
		contents []byte
		want     string
	}{
		{"cut record", cifarFile(0, 2)[:2*3073-5], "6141 bytes is not a whole number of 3073-byte records"},
		{"empty", nil, "empty"},
		{"bad label", append(cifarFile(0, 1), append([]byte{10}, make([]byte, 3072)...)...), "record 1 has label 10"},
	} {
		dir := t.TempDir()
		writeCIFAR(t, dir, 1)
		p := writeFile(t, dir, "data_batch_3.bin", c.contents)
		_, _, err := LoadCIFAR10(dir)
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Path != p || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error = %v, want a *FormatError on %s saying %q", c.name, err, p, c.want)
		}
		t.Logf("%s: %v", c.name, err)
	}
}
