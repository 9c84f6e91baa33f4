package data

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CIFAR10URL is where the CIFAR-10 binary version is published; extracting
// it (tar xzf) gives the folder cifar-10-batches-bin.
const CIFAR10URL = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"

// A CIFAR-10 binary record: one label byte, then 3×32×32 pixel bytes,
// channel-major (the 1024 red values row by row, then green, then blue).
const (
	cifarSide   = 32
	cifarPixels = 3 * cifarSide * cifarSide
	cifarRecord = 1 + cifarPixels
)

// LoadCIFAR10 reads the CIFAR-10 binary batches from dir: the training set
// from data_batch_1.bin … data_batch_5.bin (50000 images, in that order) and
// the test set from test_batch.bin (10000). dir may be the extracted
// cifar-10-batches-bin folder or the folder holding it. Images are 3×32×32
// (RGB), 10 classes (airplane, automobile, bird, cat, deer, dog, frog,
// horse, ship, truck). Nothing is downloaded: get CIFAR10URL and extract it.
//
// Missing files give an error wrapping fs.ErrNotExist that lists them; a
// file whose size is not a whole number of 3073-byte records, or with a
// label above 9, a *FormatError.
func LoadCIFAR10(dir string) (train, test *Images, err error) {
	if dir == "" {
		return nil, nil, fmt.Errorf("data.LoadCIFAR10: no folder given: download %s, extract it (tar xzf) and pass --data DIR naming the cifar-10-batches-bin folder: %w", CIFAR10URL, fs.ErrNotExist)
	}
	if fi, err := os.Stat(filepath.Join(dir, "cifar-10-batches-bin")); err == nil && fi.IsDir() {
		dir = filepath.Join(dir, "cifar-10-batches-bin")
	}
	trainFiles := []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"}
	testFiles := []string{"test_batch.bin"}
	var missing []string
	for _, name := range append(trainFiles, testFiles...) {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("data.LoadCIFAR10: %w", err)
		}
		if err != nil || !fi.Mode().IsRegular() {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("data.LoadCIFAR10: %s lacks %s (want data_batch_1.bin … data_batch_5.bin and test_batch.bin): %w; "+
			"download %s, extract it (tar xzf) and pass --data DIR naming the cifar-10-batches-bin folder",
			dir, strings.Join(missing, ", "), fs.ErrNotExist, CIFAR10URL)
	}
	if train, err = readCIFARFiles(dir, trainFiles); err != nil {
		return nil, nil, err
	}
	if test, err = readCIFARFiles(dir, testFiles); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// readCIFARFiles reads and concatenates CIFAR-10 binary files.
func readCIFARFiles(dir string, names []string) (*Images, error) {
	paths := make([]string, len(names))
	total := 0
	for i, name := range names {
		paths[i] = filepath.Join(dir, name)
		fi, err := os.Stat(paths[i])
		if err != nil {
			return nil, fmt.Errorf("data.LoadCIFAR10: %w", err)
		}
		if err := checkCIFARSize(fi.Size()); err != nil {
			return nil, &FormatError{Path: paths[i], Format: "CIFAR-10 binary", Err: err}
		}
		total += int(fi.Size() / cifarRecord)
	}
	m := &Images{N: total, C: 3, H: cifarSide, W: cifarSide, Pixels: make([]uint8, total*cifarPixels), Labels: make([]uint8, total), Classes: 10}
	at := 0
	for _, p := range paths {
		n, err := readCIFARFile(p, m.Pixels[at*cifarPixels:], m.Labels[at:])
		if err != nil {
			return nil, err
		}
		at += n
	}
	if at != total {
		return nil, fmt.Errorf("data.LoadCIFAR10: read %d records from %s, expected %d (did the files change while being read?)", at, dir, total)
	}
	return m, nil
}

// checkCIFARSize checks that a file of size bytes holds whole records.
func checkCIFARSize(size int64) error {
	if size == 0 {
		return errors.New("the file is empty")
	}
	if size%cifarRecord != 0 {
		return fmt.Errorf("%d bytes is not a whole number of %d-byte records (1 label byte + 3×32×32 pixel bytes): %d records and %d bytes over",
			size, cifarRecord, size/cifarRecord, size%cifarRecord)
	}
	return nil
}

// readCIFARFile reads the records of one file into pixels and labels and
// returns how many there were.
func readCIFARFile(path string, pixels, labels []uint8) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("data.LoadCIFAR10: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return 0, fmt.Errorf("data.LoadCIFAR10: %w", err)
	}
	if err := checkCIFARSize(int64(len(b))); err != nil {
		return 0, &FormatError{Path: path, Format: "CIFAR-10 binary", Err: err}
	}
	n := len(b) / cifarRecord
	if n > len(labels) {
		return 0, fmt.Errorf("data.LoadCIFAR10: %s grew while being read", path)
	}
	for i := range n {
		rec := b[i*cifarRecord : (i+1)*cifarRecord]
		if rec[0] > 9 {
			return 0, &FormatError{Path: path, Format: "CIFAR-10 binary", Err: fmt.Errorf("record %d has label %d, want 0-9", i, rec[0])}
		}
		labels[i] = rec[0]
		copy(pixels[i*cifarPixels:], rec[1:])
	}
	return n, nil
}
