package nn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/safetensors"
)

// maxMismatches bounds how many mismatches an error lists.
const maxMismatches = 20

// StateTensors returns m's parameters and buffers (Params) by full name,
// each name preceded by prefix. A tensor shared by several layers appears
// once. It is an error for a param to have no name or for two params to
// share one.
func StateTensors(m Module, prefix string) (map[string]*autograd.Tensor, error) {
	ts, err := stateTensors(m, prefix)
	if err != nil {
		return nil, fmt.Errorf("nn.StateTensors: %w", err)
	}
	return ts, nil
}

func stateTensors(m Module, prefix string) (map[string]*autograd.Tensor, error) {
	ps := m.Params()
	out := make(map[string]*autograd.Tensor, len(ps))
	for i, p := range ps {
		if p.Name == "" {
			return nil, fmt.Errorf("param %d (%v) has no name", i, p.T)
		}
		if _, dup := out[prefix+p.Name]; dup {
			return nil, fmt.Errorf("two params are named %q", p.Name)
		}
		out[prefix+p.Name] = p.T
	}
	return out, nil
}

// Save writes every parameter and buffer of m, by full name and in its own
// dtype, bit for bit, with the metadata meta (may be nil), to a safetensors
// file at path, which Python opens with safetensors.torch.load_file. The
// file carries a CRC-32C of every tensor and of the metadata (see
// safetensors.ChecksumPrefix), which Load verifies. The write is atomic
// (safetensors.WriteFile): if Save fails, the file that was at path is
// unchanged. A model on a device that holds no values (meta) cannot be
// saved. Metadata keys may not start with safetensors.ChecksumPrefix.
//
// Memory: Save copies the tensors to the Go heap once (the file's size)
// and computes the checksums from that copy; Load reads the whole file
// into it. Neither allocates device memory for
// tensors that cover their storage block, as parameters do; a strided view
// goes through a device workspace copy of its size, released at once.
func Save(path string, m Module, meta map[string]string) error {
	ts, err := stateTensors(m, "")
	if err != nil {
		return fmt.Errorf("nn.Save %s: %w", path, err)
	}
	return writeTensors("nn.Save", path, ts, meta)
}

// Load reads the file at path, written by Save or by any safetensors
// writer, into m's parameters and buffers and returns the file's metadata
// (never nil; without the checksum keys). The file must hold exactly m's
// names, each with m's dtype and shape; otherwise Load returns an error
// listing every missing, unexpected and mismatched tensor and changes
// nothing. A file that cannot be read or decoded, or whose checksums do not
// match (an error naming the file and the tensor), changes nothing either.
// A file without checksums (from Python, or saved before headroom wrote
// them) loads unverified.
func Load(path string, m Module) (map[string]string, error) {
	ts, err := stateTensors(m, "")
	if err != nil {
		return nil, fmt.Errorf("nn.Load %s: %w", path, err)
	}
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("nn.Load: %w", err)
	}
	if err := assignTensors(ts, f, ""); err != nil {
		return nil, fmt.Errorf("nn.Load %s: %w", path, err)
	}
	return f.Metadata, nil
}

// WriteTensors writes ts, by name and each in its own dtype, with the
// metadata meta (may be nil) and the checksums of both, to a safetensors
// file at path, atomically (a failure leaves the old file unchanged). The
// tensors are laid out as Python's safetensors writer lays them out
// (safetensors.File.Sort).
//
// With distinct prefixes, one file holds several parts (a model, its
// optimizer's state) that resume all or nothing:
//
//	all, _ := nn.StateTensors(m, "model.")
//	maps.Copy(all, optimizerState) // names starting "optim."
//	err := nn.WriteTensors(path, all, map[string]string{"step": "1200"})
//	…
//	f, err := nn.ReadTensors(path)
//	err = nn.AssignTensors(all, f, "") // every tensor of f, or none
//
// Parts kept in separate maps (keys without their prefix) load the same way
// if CheckTensors(part, f, prefix) passes for every part before the first
// AssignTensors.
func WriteTensors(path string, ts map[string]*autograd.Tensor, meta map[string]string) error {
	return writeTensors("nn.WriteTensors", path, ts, meta)
}

// ReadTensors reads and checks a safetensors file, for AssignTensors: its
// layout and, when it has them, its checksums (a mismatch is an error
// naming the file and the tensor, wrapping a *safetensors.ChecksumError).
func ReadTensors(path string) (*safetensors.File, error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("nn.ReadTensors: %w", err)
	}
	return f, nil
}

// CheckTensors reports whether AssignTensors(dst, f, prefix) would
// succeed: every name n of dst must be in f as prefix+n with dst[n]'s dtype
// and shape, and every tensor of f whose name starts with prefix must be
// one of those (with prefix "", every tensor of f). The error lists every
// missing, unexpected and mismatched tensor, up to 20.
func CheckTensors(dst map[string]*autograd.Tensor, f *safetensors.File, prefix string) error {
	if err := checkTensors(dst, f, prefix); err != nil {
		return fmt.Errorf("nn.CheckTensors: %w", err)
	}
	return nil
}

// AssignTensors copies the tensors of f named prefix+n into dst[n], for
// every name n of dst, after checking all of them as CheckTensors does: on
// any mismatch it returns the error and writes nothing. Values are copied
// bit for bit.
func AssignTensors(dst map[string]*autograd.Tensor, f *safetensors.File, prefix string) error {
	if err := assignTensors(dst, f, prefix); err != nil {
		return fmt.Errorf("nn.AssignTensors: %w", err)
	}
	return nil
}

// writeTensors copies ts to the host and writes them; op names the
// exported function for errors.
func writeTensors(op, path string, ts map[string]*autograd.Tensor, meta map[string]string) error {
	f := &safetensors.File{Tensors: make(map[string]safetensors.Tensor, len(ts)), Metadata: meta}
	for _, name := range sortedNames(ts) {
		t := ts[name]
		if err := usableTensor(t); err != nil {
			return fmt.Errorf("%s %s: tensor %q: %w", op, path, name, err)
		}
		if t.Device().Kernels() == nil {
			return fmt.Errorf("%s %s: tensor %q is on device %s, which holds no values", op, path, name, t.Device().Name())
		}
		data, err := readRaw(t)
		if err != nil {
			return fmt.Errorf("%s %s: tensor %q: %w", op, path, name, err)
		}
		f.Tensors[name] = safetensors.Tensor{DType: t.DType(), Shape: t.Shape(), Data: data}
	}
	f.Sort()
	f.SetChecksums()
	if err := safetensors.WriteFile(path, f); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

func assignTensors(dst map[string]*autograd.Tensor, f *safetensors.File, prefix string) error {
	if err := checkTensors(dst, f, prefix); err != nil {
		return err
	}
	for _, name := range sortedNames(dst) {
		if err := writeRaw(dst[name], f.Tensors[prefix+name].Data); err != nil {
			return fmt.Errorf("tensor %q: %w", name, err) // unreachable after check
		}
	}
	return nil
}

func checkTensors(dst map[string]*autograd.Tensor, f *safetensors.File, prefix string) error {
	if f == nil {
		return errors.New("nil *safetensors.File")
	}
	var bad []string
	for _, name := range sortedNames(dst) {
		t, full := dst[name], prefix+name
		if err := usableTensor(t); err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", full, err))
			continue
		}
		kind, shape := safetensors.KindOf(t.DType()), t.Shape()
		ft, ok := f.Tensors[full]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("missing %q (%s %v)", full, kind, shape))
		case fileKind(ft) != kind || !slices.Equal(ft.Shape, shape) || int64(len(ft.Data)) != t.Bytes():
			bad = append(bad, fmt.Sprintf("%q: file has %s %v (%d bytes), want %s %v (%d bytes)",
				full, fileKind(ft), ft.Shape, len(ft.Data), kind, shape, t.Bytes()))
		}
	}
	for _, full := range sortedNames(f.Tensors) {
		if name, ok := strings.CutPrefix(full, prefix); ok {
			if _, known := dst[name]; !known {
				ft := f.Tensors[full]
				bad = append(bad, fmt.Sprintf("unexpected %q (%s %v)", full, fileKind(ft), ft.Shape))
			}
		}
	}
	if len(bad) == 0 {
		return nil
	}
	n, more, what := len(bad), "", "mismatches"
	if n > maxMismatches {
		bad, more = bad[:maxMismatches], fmt.Sprintf("; and %d more", n-maxMismatches)
	}
	if n == 1 {
		what = "mismatch"
	}
	return fmt.Errorf("%d %s between the file and the %d destination tensors: %s%s",
		n, what, len(dst), strings.Join(bad, "; "), more)
}

// usableTensor reports why t cannot be read or written, or nil.
func usableTensor(t *autograd.Tensor) error {
	switch {
	case t == nil:
		return errors.New("nil tensor")
	case t.Released():
		return fmt.Errorf("released (%v)", t)
	}
	return nil
}

// fileKind is a file tensor's safetensors type name.
func fileKind(t safetensors.Tensor) string {
	if t.Kind != "" {
		return t.Kind
	}
	return safetensors.KindOf(t.DType)
}

func sortedNames[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// wholeOperand returns t as a kernel operand when t covers its block
// exactly, as every parameter and buffer does (a contiguous tensor as many
// bytes long as its block must start at the block's first byte, so the
// operand's offset is 0); ok is false for views.
func wholeOperand(t *autograd.Tensor) (device.Operand, bool) {
	if !t.IsContiguous() || t.Block().Len() != t.Bytes() {
		return device.Operand{}, false
	}
	return device.Operand{Block: t.Block(), DType: t.DType(), Shape: t.Shape()}, true
}

// readRaw copies t's elements to the host, row-major, in t's dtype. A
// tensor covering its block is read raw through the device's kernels; a
// view goes through autograd's typed copies, which give the same bits except
// for the payload of a signalling F16/BF16 NaN (made quiet).
func readRaw(t *autograd.Tensor) ([]byte, error) {
	out := make([]byte, t.Bytes())
	if len(out) == 0 {
		return out, nil
	}
	if op, ok := wholeOperand(t); ok {
		t.Device().Kernels().Read(out, op)
		return out, nil
	}
	err := autograd.Try(func() {
		switch t.DType() {
		case dtype.F64:
			copy(out, dtype.Bytes(t.Float64s()))
		case dtype.F32:
			copy(out, dtype.Bytes(t.Float32s()))
		case dtype.F16, dtype.BF16:
			dtype.FromF32(t.DType(), out, t.Float32s())
		default: // integers: through int64, exact
			for i, v := range t.Int64s() {
				putIntLE(t.DType(), out, i, v)
			}
		}
	})
	return out, err
}

// writeRaw writes data (t's elements in t's dtype) into t. On a device
// that holds no values it writes nothing.
func writeRaw(t *autograd.Tensor, data []byte) error {
	k := t.Device().Kernels()
	if k == nil || len(data) == 0 {
		return nil
	}
	if op, ok := wholeOperand(t); ok {
		k.Write(op, data)
		t.Block().Bump()
		return nil
	}
	return autograd.Try(func() {
		n := t.Len()
		if t.DType().IsFloat() {
			v := make([]float64, n)
			dtype.ToF64(v, t.DType(), data)
			t.SetFloat64s(v)
			return
		}
		v := make([]int64, n)
		for i := range v {
			v[i] = intLE(t.DType(), data, i)
		}
		t.SetInt64s(v)
	})
}

// putIntLE stores v as element i of little-endian integer storage b.
func putIntLE(d dtype.DType, b []byte, i int, v int64) {
	switch d {
	case dtype.I8:
		b[i] = byte(v)
	case dtype.I32:
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	case dtype.I64:
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
}

// intLE loads element i of little-endian integer storage b.
func intLE(d dtype.DType, b []byte, i int) int64 {
	switch d {
	case dtype.I8:
		return int64(int8(b[i]))
	case dtype.I32:
		return int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return int64(binary.LittleEndian.Uint64(b[8*i:]))
}
