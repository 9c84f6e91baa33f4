package safetensors

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/headroom-ml/headroom/dtype"
)

// MaxHeaderSize is the largest header, in bytes, that Decode reads and
// Encode writes: 100,000,000, the reference implementation's limit.
const MaxHeaderSize = 100_000_000

// metadataKey is the header key of the free-form string metadata.
const metadataKey = "__metadata__"

// Tensor is one named array of a file: its element type, its dimensions
// and its elements, little-endian and row-major.
//
// Kind is the element type's safetensors name ("F32", "BF16", "U8",
// "BOOL", …; Kinds lists them). DType is the same type as a project dtype,
// or dtype.Invalid for the format's types the project has no dtype for
// (BOOL, U8, U16, U32, U64, I16, C64 and the 4-, 6- and 8-bit floats). Decode
// sets both. For Encode either is enough: an empty Kind is taken from
// DType; when both are set they must name the same type.
type Tensor struct {
	DType dtype.DType
	Kind  string
	Shape []int
	Data  []byte
}

// File is the content of a safetensors file.
type File struct {
	// Names lists every key of Tensors once, in the order of the tensors'
	// data in the file; Encode writes them in this order.
	Names []string
	// Tensors maps each name to its tensor.
	Tensors map[string]Tensor
	// Metadata is the header's free-form "__metadata__" object. Decode
	// returns an empty map when the file has none; Encode writes it only
	// when it is not empty, with keys sorted. Keys starting with
	// ChecksumPrefix are reserved for Checksums.
	Metadata map[string]string
	// Checksums maps each tensor's name, and MetadataChecksum, to the
	// CRC-32C of its bytes (see ChecksumPrefix). Decode sets it from the
	// header after verifying every one, or leaves it nil when the file has
	// none. Encode writes it into the metadata when it is not empty, after
	// checking that it covers every tensor and the metadata and that each
	// value matches the bytes (SetChecksums fills it in).
	Checksums map[string]uint32
}

// resolve returns the kind of t and its rank in kinds.
func (t Tensor) resolve() (kind, int, error) {
	if t.Kind == "" {
		name := KindOf(t.DType)
		if name == "" {
			return kind{}, 0, fmt.Errorf("no Kind and no valid DType (%v)", t.DType)
		}
		k, r, _ := lookupKind(name)
		return k, r, nil
	}
	k, r, ok := lookupKind(t.Kind)
	if !ok {
		return kind{}, 0, fmt.Errorf("unknown dtype %q (known: %v)", t.Kind, Kinds())
	}
	if t.DType != dtype.Invalid && t.DType != k.dt {
		return kind{}, 0, fmt.Errorf("Kind %s and DType %v disagree", t.Kind, t.DType)
	}
	return k, r, nil
}

// numBytes returns the bytes of an array of shape with elements of k,
// checking each step for overflow as the reference implementation does.
func numBytes(shape []int, k kind) (int, error) {
	n := uint64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", shape)
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt {
			return 0, fmt.Errorf("shape %v: element count overflows", shape)
		}
		n = lo
	}
	hi, nbits := bits.Mul64(n, uint64(k.bits))
	if hi != 0 || nbits > math.MaxInt {
		return 0, fmt.Errorf("shape %v of %s: byte size overflows", shape, k.name)
	}
	if nbits%8 != 0 {
		return 0, fmt.Errorf("shape %v of %s: %d bits is not a whole number of bytes", shape, k.name, nbits)
	}
	return int(nbits / 8), nil
}

// Sort sets f.Names to every key of f.Tensors in the order the reference
// writer (Python's safetensors.save_file) uses: by element type from the
// most aligned (U64, I64, F64, C64, F32, …) to the least (… U8, F4, BOOL),
// then by name. With the header padded to 8 bytes, as Encode pads it, every
// tensor's data then starts at a multiple of its element size, which readers
// that map the file and cast in place need; and Encode's output is
// byte-identical to the reference writer's (see the package documentation
// for the one caveat, about metadata). Tensors whose type is unknown sort
// last.
func (f *File) Sort() {
	names := make([]string, 0, len(f.Tensors))
	for n := range f.Tensors {
		names = append(names, n)
	}
	rank := func(n string) int {
		_, r, err := f.Tensors[n].resolve()
		if err != nil {
			return -1
		}
		return r
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(b), rank(a)), cmp.Compare(a, b))
	})
	f.Names = names
}

// errNilFile is returned when Encode or WriteFile is given no file.
var errNilFile = errors.New("nil *File")
