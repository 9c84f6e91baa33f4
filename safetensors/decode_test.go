package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/safetensors"
)

// raw frames a header that is not padded (the reader must not care).
func raw(header string, data string) []byte {
	return append(framed(header), data...)
}

// Each malformed file is rejected with an error that names the problem.
func TestDecodeRejects(t *testing.T) {
	const a = `"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`
	tensor := func(dt, shape, offs string) string {
		return `{"t":{"dtype":` + dt + `,"shape":` + shape + `,"data_offsets":` + offs + `}}`
	}
	huge := binary.LittleEndian.AppendUint64(nil, 100_000_001)
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty file", nil, "file of 0 bytes is too short"},
		{"7 bytes", make([]byte, 7), "file of 7 bytes is too short"},
		{"header over the limit", append(huge, "{}"...), "header length 100000001 is over the limit of 100000000"},
		{"header length 2^64-1", append(bytes.Repeat([]byte{0xff}, 8), "{}"...), "over the limit"},
		{"header past the end", append(binary.LittleEndian.AppendUint64(nil, 60), `{"t":1}`...), "header length 60 runs past the end of the 15-byte file"},
		{"no header", framed(""), "JSON ends early"},
		{"not UTF-8", framed("{\"\xff\":1}"), "not valid UTF-8 (bad byte at header offset 2)"},
		{"not JSON", framed("{"), "JSON ends early, in the header"},
		{"syntax error", framed(`{"a" 1}`), `invalid JSON in tensor "a" near byte 5: invalid character`},
		{"array", framed("[]"), "the header is an array, want an object"},
		{"trailing text", framed("{} x"), `not white space (first 'x')`},
		{"two objects", framed("{}{}"), "not white space"},
		{"NUL padding", framed("{}\x00\x00"), "not white space"},
		{"tensor is a number", framed(`{"t":1}`), `tensor "t" is the number 1, want an object`},
		{"tensor is null", framed(`{"t":null}`), `tensor "t" is null, want an object`},
		{"no dtype", framed(`{"t":{"shape":[],"data_offsets":[0,4]}}`), `tensor "t" has no "dtype" field`},
		{"no shape", framed(`{"t":{"dtype":"F32","data_offsets":[0,4]}}`), `tensor "t" has no "shape" field`},
		{"no offsets", framed(`{"t":{"dtype":"F32","shape":[]}}`), `tensor "t" has no "data_offsets" field`},
		{"unknown dtype", framed(tensor(`"F31"`, "[]", "[0,4]")), `tensor "t": unknown dtype "F31"`},
		{"lower-case dtype", framed(tensor(`"f32"`, "[]", "[0,4]")), `unknown dtype "f32"`},
		{"dtype not a string", framed(tensor(`32`, "[]", "[0,4]")), `dtype is the number 32, want a string`},
		{"shape not an array", framed(tensor(`"F32"`, "4", "[0,4]")), `shape is the number 4, want an array`},
		{"negative dimension", framed(tensor(`"F32"`, "[-1]", "[0,4]")), `shape: element 0 is -1, want an integer`},
		{"fractional dimension", framed(tensor(`"F32"`, "[1,1.5]", "[0,4]")), `shape: element 1 is 1.5`},
		{"exponent dimension", framed(tensor(`"F32"`, "[1e1]", "[0,40]")), `shape: element 0 is 1e1`},
		{"string dimension", framed(tensor(`"F32"`, `["2"]`, "[0,8]")), `shape: element 0 is the string "2"`},
		{"nested shape", framed(tensor(`"F32"`, `[[2]]`, "[0,8]")), `shape: element 0 is an array`},
		{"dimension past 2^64", framed(tensor(`"F32"`, "[18446744073709551616]", "[0,8]")), "want an integer from 0 to 2^64-1"},
		{"dimension past MaxInt", framed(tensor(`"I32"`, "[2,18446744073709551614]", "[0,16]")), "dimension 18446744073709551614 is too large"},
		{"element count overflows", framed(tensor(`"I32"`, "[2,9223372036854775807]", "[0,16]")), "element count overflows"},
		{"byte size overflows", framed(tensor(`"I32"`, "[4611686018427387904]", "[0,16]")), "byte size overflows"},
		{"3 offsets", framed(tensor(`"F32"`, "[]", "[0,4,8]")), "data_offsets has 3 elements, want 2"},
		{"1 offset", framed(tensor(`"F32"`, "[]", "[4]")), "data_offsets has 1 elements, want 2"},
		{"end before begin", raw(tensor(`"F32"`, "[0]", "[4,0]"), "1234"), "data_offsets [4, 0] end before they begin"},
		{"span too short", raw(tensor(`"I32"`, "[2,2]", "[0,4]"), "1234"), "data_offsets [0, 4] span 4 bytes, but shape [2 2] of I32 needs 16"},
		{"span too long", raw(tensor(`"I32"`, "[]", "[0,8]"), "12345678"), "span 8 bytes, but shape [] of I32 needs 4"},
		{"sub-byte misaligned", raw(tensor(`"F4"`, "[3]", "[0,2]"), "12"), "12 bits is not a whole number of bytes"},
		{"gap at start", raw(tensor(`"F32"`, "[]", "[4,8]"), "12345678"), "leave a gap: the first tensor must start at 0"},
		{"gap between", raw(`{`+a+`,"b":{"dtype":"I8","shape":[1],"data_offsets":[9,10]}}`, "0123456789"),
			`tensor "b": data_offsets [9, 10] leave a gap after tensor "a", which ends at 8`},
		{"overlap", raw(`{`+a+`,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, "0123456789ab"),
			`tensor "b": data_offsets [4, 12] overlap tensor "a", which ends at 8`},
		{"same offsets", raw(`{`+a+`,"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, "01234567"), `overlap tensor "a"`},
		{"bytes after the last tensor", raw(`{`+a+`}`, "01234567extra_bogus_data_for_polyglot_file"),
			"the tensors cover 8 bytes, but 42 bytes follow the header (34 unaccounted for)"},
		{"truncated data", raw(`{`+a+`}`, "012345"), `tensor "a": data_offsets [0, 8] run past the 6 bytes that follow the header (truncated?)`},
		{"duplicate tensor", raw(`{`+a+`,`+a+`}`, "01234567"), `header: key "a" appears twice`},
		{"duplicate field", raw(`{"a":{"dtype":"F32","dtype":"I32","shape":[2],"data_offsets":[0,8]}}`, "01234567"),
			`tensor "a": field "dtype" appears twice`},
		{"metadata twice", framed(`{"__metadata__":{},"__metadata__":{}}`), `key "__metadata__" appears twice`},
		{"metadata key twice", framed(`{"__metadata__":{"k":"1","k":"2"}}`), `"__metadata__": key "k" appears twice`},
		{"metadata value a number", framed(`{"__metadata__":{"k":1}}`), `"__metadata__": value of "k" is the number 1, want a string`},
		{"metadata an array", framed(`{"__metadata__":["k"]}`), `"__metadata__" is an array, want an object of strings`},
	}
	for _, c := range cases {
		f, err := safetensors.Decode(c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Decode = %v, %v; want an error containing %q", c.name, f, err, c.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), "safetensors.Decode: ") {
			t.Errorf("%s: error %q does not name the operation", c.name, err)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// Files the reference accepts that are unusual: white space around the
// header, no padding, null metadata, unknown fields, empty and scalar
// tensors, tensors listed out of offset order.
func TestDecodeAccepts(t *testing.T) {
	f, err := safetensors.Decode(framed("\t\n{}\r \t\n"))
	if err != nil || len(f.Names) != 0 || f.Metadata == nil || len(f.Metadata) != 0 {
		t.Errorf("white space: %+v, %v", f, err)
	}
	f, err = safetensors.Decode(framed(`{"__metadata__":null}`))
	if err != nil || f.Metadata == nil || len(f.Metadata) != 0 {
		t.Errorf("null metadata: %+v, %v", f, err)
	}
	f, err = safetensors.Decode(raw(`{"t":{"dtype":"I8","extra":{"x":[1,[2]]},"shape":[1],"data_offsets":[0,1],"more":null}}`, "\x07"))
	if err != nil || !bytes.Equal(f.Tensors["t"].Data, []byte{7}) {
		t.Errorf("unknown fields: %+v, %v", f, err)
	}
	f, err = safetensors.Decode(raw(`{"test":{"dtype":"I32","shape":[2,0],"data_offsets":[0, 0]}}`, ""))
	if err != nil || !slices.Equal(f.Tensors["test"].Shape, []int{2, 0}) || len(f.Tensors["test"].Data) != 0 {
		t.Errorf("zero-sized tensor: %+v, %v", f, err)
	}
	f, err = safetensors.Decode(raw(`{"test":{"dtype":"I32","shape":[],"data_offsets":[0,4]}}`, "\x01\x00\x00\x00"))
	if s := f.Tensors["test"].Shape; err != nil || s == nil || len(s) != 0 {
		t.Errorf("scalar: %+v, %v", f, err)
	}
	// Out of order in the header; empty tensors tie at one offset and keep
	// the header's order.
	f, err = safetensors.Decode(raw(`{"z":{"dtype":"I8","shape":[2],"data_offsets":[1,3]},`+
		`"e2":{"dtype":"F32","shape":[0,5],"data_offsets":[0,0]},"y":{"dtype":"I8","shape":[1],"data_offsets":[0,1]},`+
		`"e1":{"dtype":"F64","shape":[0],"data_offsets":[0,0]}}`, "abc"))
	if want := []string{"e2", "e1", "y", "z"}; err != nil || !slices.Equal(f.Names, want) {
		t.Fatalf("order: %+v, %v; want names %v", f, err, want)
	}
	if string(f.Tensors["y"].Data) != "a" || string(f.Tensors["z"].Data) != "bc" {
		t.Errorf("data: y %q z %q", f.Tensors["y"].Data, f.Tensors["z"].Data)
	}
	// Data is capacity-limited: appending to y cannot overwrite z.
	_ = append(f.Tensors["y"].Data, 'X')
	if string(f.Tensors["z"].Data) != "bc" {
		t.Errorf("append to y changed z to %q", f.Tensors["z"].Data)
	}
}

// A valid file cut anywhere is rejected.
func TestDecodeTruncated(t *testing.T) {
	f := &safetensors.File{Metadata: map[string]string{"step": "3"}, Tensors: map[string]safetensors.Tensor{
		"w": {Kind: "F32", Shape: []int{2, 3}, Data: le[float32](1, 2, 3, 4, 5, 6)},
		"b": {Kind: "BF16", Shape: []int{3}, Data: le[uint16](1, 2, 3)},
	}}
	f.Sort()
	b := encode(t, f)
	for n := range len(b) {
		if g, err := safetensors.Decode(b[:n]); err == nil {
			t.Fatalf("Decode of the first %d of %d bytes = %+v, want an error", n, len(b), g)
		}
	}
	if _, err := safetensors.Decode(b); err != nil {
		t.Fatal(err)
	}
}
