package data

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// FormatError reports a data file whose contents do not follow its format:
// a bad magic number, impossible dimensions, a truncated or overlong body,
// a label out of range, a corrupt gzip stream.
type FormatError struct {
	Path   string // the file
	Format string // the format it should have: "IDX", "CIFAR-10 binary"
	Err    error  // what was wrong
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("data: %s is not a valid %s file: %v", e.Path, e.Format, e.Err)
}

// Unwrap returns the underlying problem.
func (e *FormatError) Unwrap() error { return e.Err }

// The IDX format (of the MNIST distribution): a big-endian magic number
// whose first two bytes are zero, the third the element type and the fourth
// the number of dimensions; then each dimension's size as a big-endian
// uint32; then the elements in row-major order. Only unsigned bytes (type
// 0x08, MNIST's magic numbers 0x00000801 for labels and 0x00000803 for
// images) are read here.
const (
	idxUbyte   = 0x08
	idxMaxDims = 8
	idxMaxData = 1 << 36 // larger claims are corrupt headers, not data sets
)

// readIDXFile reads an IDX file, gzipped (recognised by its first two bytes,
// 0x1f 0x8b) or not, and returns its dimensions and elements.
func readIDXFile(path string) (dims []int, data []byte, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r, err := maybeGunzip(f)
	if err != nil {
		return nil, nil, &FormatError{Path: path, Format: "IDX", Err: err}
	}
	dims, data, err = readIDX(r)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, nil, err // an I/O failure, not the file's fault
		}
		return nil, nil, &FormatError{Path: path, Format: "IDX", Err: err}
	}
	return dims, data, nil
}

// maybeGunzip returns a reader of f's contents, decompressed when f starts
// with the gzip magic bytes.
func maybeGunzip(f io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(f, 1<<16)
	head, err := br.Peek(2)
	if err == nil && head[0] == 0x1f && head[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip header: %w", err)
		}
		return z, nil
	}
	return br, nil
}

// readIDX parses an unsigned-byte IDX stream. It checks the magic number,
// the dimensions (1 to 8 of them, each positive) and that the body holds
// exactly the product of the dimensions in bytes.
func readIDX(r io.Reader) (dims []int, data []byte, err error) {
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return nil, nil, fmt.Errorf("reading the 4-byte magic number: %w", truncated(err))
	}
	m := binary.BigEndian.Uint32(magic[:])
	if magic[0] != 0 || magic[1] != 0 {
		return nil, nil, fmt.Errorf("magic number %#08x does not start with two zero bytes", m)
	}
	if magic[2] != idxUbyte {
		return nil, nil, fmt.Errorf("magic number %#08x has element type %#02x, want %#02x (unsigned byte)", m, magic[2], idxUbyte)
	}
	nd := int(magic[3])
	if nd < 1 || nd > idxMaxDims {
		return nil, nil, fmt.Errorf("magic number %#08x declares %d dimensions, want 1 to %d", m, nd, idxMaxDims)
	}
	raw := make([]byte, 4*nd)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, nil, fmt.Errorf("reading %d dimension sizes: %w", nd, truncated(err))
	}
	dims = make([]int, nd)
	total := 1
	for i := range dims {
		d := int(binary.BigEndian.Uint32(raw[4*i:]))
		if d == 0 {
			return nil, nil, fmt.Errorf("dimension %d of %s is 0", i, shapeString(dims[:i+1]))
		}
		dims[i] = d
		if total > idxMaxData/d {
			return nil, nil, fmt.Errorf("dimensions %s declare more than %d bytes", shapeString(dims[:i+1]), idxMaxData)
		}
		total *= d
	}
	data, err = readAtMost(r, total+1)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the %s = %d data bytes: %w", shapeString(dims), total, truncated(err))
	}
	if len(data) < total {
		return nil, nil, fmt.Errorf("truncated: dimensions %s need %d data bytes, found %d", shapeString(dims), total, len(data))
	}
	if len(data) > total {
		return nil, nil, fmt.Errorf("more data than dimensions %s declare (%d bytes)", shapeString(dims), total)
	}
	return dims, data, nil
}

// readAtMost reads r to its end or to limit bytes, whichever comes first.
// It grows its buffer as data arrives, so a corrupt size in a header costs
// no more memory than the file holds.
func readAtMost(r io.Reader, limit int) ([]byte, error) {
	buf := make([]byte, 0, min(limit, 64<<20))
	for len(buf) < limit {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, min(cap(buf), limit-len(buf)))...)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), limit)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// truncated turns an end of file met mid-record into a plain description.
func truncated(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errors.New("file ends early")
	}
	return err
}

// shapeString formats sizes as 60000×28×28.
func shapeString(dims []int) string {
	s := make([]string, len(dims))
	for i, d := range dims {
		s[i] = fmt.Sprint(d)
	}
	return strings.Join(s, "×")
}
