package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/safetensors"
)

// le returns the little-endian bytes of the values.
func le[T any](vs ...T) []byte {
	var b bytes.Buffer
	for _, v := range vs {
		if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

// framed prefixes a header (already padded) with its 8-byte length and
// appends the data.
func framed(header string, data ...[]byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	for _, d := range data {
		out = append(out, d...)
	}
	return out
}

func encode(t *testing.T, f *safetensors.File) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := safetensors.Encode(&b, f); err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return b.Bytes()
}

// diff describes how two files differ, or returns "".
func diff(a, b *safetensors.File) string {
	if !slices.Equal(a.Names, b.Names) {
		return "names " + strings.Join(a.Names, ",") + " vs " + strings.Join(b.Names, ",")
	}
	if len(a.Tensors) != len(b.Tensors) {
		return "tensor counts differ"
	}
	for n, x := range a.Tensors {
		y, ok := b.Tensors[n]
		switch {
		case !ok:
			return "missing " + n
		case kindOf(x) != kindOf(y) || (x.DType != y.DType && x.DType != dtype.Invalid && y.DType != dtype.Invalid):
			return "type of " + n
		case !slices.Equal(x.Shape, y.Shape):
			return "shape of " + n
		case !bytes.Equal(x.Data, y.Data):
			return "data of " + n
		}
	}
	if len(a.Metadata) != len(b.Metadata) {
		return "metadata sizes differ"
	}
	for k, v := range a.Metadata {
		if w, ok := b.Metadata[k]; !ok || w != v {
			return "metadata " + k
		}
	}
	if !maps.Equal(a.Checksums, b.Checksums) {
		return "checksums differ"
	}
	return ""
}

// kindOf is the tensor's Kind, or the one its DType gives.
func kindOf(t safetensors.Tensor) string {
	if t.Kind != "" {
		return t.Kind
	}
	return safetensors.KindOf(t.DType)
}

// A small file built by hand from the specification: the length, the
// compact header with its keys in order, the padding to 8, the data.
func TestEncodeExactBytes(t *testing.T) {
	f := &safetensors.File{
		Names: []string{"b", "a"},
		Tensors: map[string]safetensors.Tensor{
			"b": {DType: dtype.I32, Shape: []int{2}, Data: le[int32](1, -2)},
			"a": {Kind: "F16", Shape: []int{}, Data: le[uint16](0x3e00)}, // 1.5
		},
		Metadata: map[string]string{"note": "v1.0"},
	}
	// 138 bytes of JSON, 6 spaces to reach 144 = 0x90.
	header := `{"__metadata__":{"note":"v1.0"},` +
		`"b":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},` +
		`"a":{"dtype":"F16","shape":[],"data_offsets":[8,10]}}` + "      "
	want := []byte{0x90, 0, 0, 0, 0, 0, 0, 0}
	want = append(want, header...)
	want = append(want, 1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0x00, 0x3e)
	got := encode(t, f)
	if !bytes.Equal(got, want) {
		t.Fatalf("Encode =\n%q\nwant\n%q", got, want)
	}
	t.Logf("%d bytes, header %q", len(got), got[8:8+0x90])
}

// Outputs of the reference writer for small inputs, as its own tests
// record them.
func TestEncodeMatchesReferenceWriter(t *testing.T) {
	f32s := le[float32](0, 1, 2, 3, 4, 5)
	cases := []struct {
		name   string
		f      *safetensors.File
		header string
		data   []byte
	}{
		{"empty", &safetensors.File{}, `{}      `, nil},
		{"metadata only", &safetensors.File{Metadata: map[string]string{"framework": "pt"}},
			`{"__metadata__":{"framework":"pt"}}     `, nil},
		{"no padding needed", &safetensors.File{Names: []string{"attn.0"}, Tensors: map[string]safetensors.Tensor{
			"attn.0": {DType: dtype.F32, Shape: []int{1, 2, 3}, Data: f32s}}},
			`{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}`, f32s},
		{"7 spaces", &safetensors.File{Names: []string{"attn0"}, Tensors: map[string]safetensors.Tensor{
			"attn0": {DType: dtype.F32, Shape: []int{1, 1, 2, 3}, Data: f32s}}},
			`{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       `, f32s},
		{"sub-byte F4", &safetensors.File{Names: []string{"attn.0"}, Tensors: map[string]safetensors.Tensor{
			"attn.0": {Kind: "F4", Shape: []int{1, 2}, Data: []byte{0}}}},
			`{"attn.0":{"dtype":"F4","shape":[1,2],"data_offsets":[0,1]}}    `, []byte{0}},
	}
	for _, c := range cases {
		got := encode(t, c.f)
		if want := framed(c.header, c.data); !bytes.Equal(got, want) {
			t.Errorf("%s: Encode =\n%q\nwant\n%q", c.name, got, want)
		}
		back, err := safetensors.Decode(got)
		if err != nil {
			t.Errorf("%s: Decode: %v", c.name, err)
		} else if d := diff(back, c.f); d != "" && len(c.f.Tensors)+len(c.f.Metadata) > 0 {
			t.Errorf("%s: round trip differs: %s", c.name, d)
		}
	}
}

// Every element type goes through Encode and Decode unchanged, with its
// Kind and (where the project has one) DType; after Sort, every tensor
// starts at a multiple of its element size.
func TestRoundTripEveryKind(t *testing.T) {
	want := map[string]dtype.DType{"F64": dtype.F64, "F32": dtype.F32, "F16": dtype.F16, "BF16": dtype.BF16,
		"I8": dtype.I8, "I32": dtype.I32, "I64": dtype.I64}
	f := &safetensors.File{Tensors: map[string]safetensors.Tensor{}, Metadata: map[string]string{"a": "1", "b": ""}}
	for i, k := range safetensors.Kinds() {
		// 8 elements of kindBits(k) bits: kindBits(k) bytes.
		x := safetensors.Tensor{Kind: k, Shape: []int{2, 4}, Data: make([]byte, kindBits(k))}
		for j := range x.Data {
			x.Data[j] = byte(17*i + j)
		}
		if d := want[k]; d.Valid() && i%2 == 0 {
			x.Kind, x.DType = "", d // Encode takes the kind from DType
		}
		f.Tensors["t_"+k] = x
	}
	f.Sort()
	b := encode(t, f)
	got, err := safetensors.Decode(b)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if !slices.Equal(got.Names, f.Names) {
		t.Errorf("Names = %v, want %v", got.Names, f.Names)
	}
	off := 0
	for _, n := range f.Names {
		in, out := f.Tensors[n], got.Tensors[n]
		k := strings.TrimPrefix(n, "t_")
		if out.Kind != k || out.DType != want[k] || !slices.Equal(out.Shape, in.Shape) || !bytes.Equal(out.Data, in.Data) {
			t.Errorf("%s: got %+v, want kind %s dtype %v shape %v data %v", n, out, k, want[k], in.Shape, in.Data)
		}
		if w := kindBits(k) / 8; w > 0 && off%w != 0 {
			t.Errorf("%s starts at data offset %d, not a multiple of %d", n, off, w)
		}
		off += len(out.Data)
	}
	if got.Metadata["a"] != "1" || got.Metadata["b"] != "" || len(got.Metadata) != 2 {
		t.Errorf("Metadata = %v", got.Metadata)
	}
	t.Logf("order: %v", got.Names)
}

// kindBits is the element size in bits of a safetensors type, from the
// format's documentation.
func kindBits(k string) int {
	switch k {
	case "F4":
		return 4
	case "F6_E2M3", "F6_E3M2":
		return 6
	case "BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ":
		return 8
	case "I16", "U16", "F16", "BF16":
		return 16
	case "I32", "U32", "F32":
		return 32
	case "F64", "I64", "U64", "C64":
		return 64
	}
	panic("unknown kind " + k)
}

// A file laid out exactly as Python's safetensors.save_file lays it out:
// tensors sorted by element type from most to least aligned (the
// reference's Dtype order: … I64 > F64 > F32 > BF16 > F16 > U8 > BOOL), then by
// name; "__metadata__" first; compact JSON padded with spaces to 8.
func TestDecodeReferenceLayout(t *testing.T) {
	header := `{"__metadata__":{"format":"pt"},` +
		`"step":{"dtype":"I64","shape":[],"data_offsets":[0,8]},` +
		`"bias":{"dtype":"F32","shape":[3],"data_offsets":[8,20]},` +
		`"weight":{"dtype":"F32","shape":[2,3],"data_offsets":[20,44]},` +
		`"emb":{"dtype":"BF16","shape":[2],"data_offsets":[44,48]},` +
		`"half":{"dtype":"F16","shape":[2],"data_offsets":[48,52]},` +
		`"mask":{"dtype":"U8","shape":[4],"data_offsets":[52,56]},` +
		`"flag":{"dtype":"BOOL","shape":[1],"data_offsets":[56,57]}}` + "  " // 438 + 2 = 440
	if len(header) != 440 {
		t.Fatalf("test header is %d bytes", len(header))
	}
	file := framed(header,
		le[int64](1000),
		le[float32](0.5, -0.25, 2),
		le[float32](1, 2, 3, 4, 5, 6),
		le[uint16](0x3f80, 0xc000), // bf16 1, -2
		le[uint16](0x3c00, 0x7bff), // f16 1, 65504
		[]byte{0, 1, 2, 255},
		[]byte{1},
	)
	f, err := safetensors.Decode(file)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	wantNames := []string{"step", "bias", "weight", "emb", "half", "mask", "flag"}
	if !slices.Equal(f.Names, wantNames) {
		t.Errorf("Names = %v, want %v", f.Names, wantNames)
	}
	if f.Metadata["format"] != "pt" {
		t.Errorf("Metadata = %v", f.Metadata)
	}
	w := f.Tensors["weight"]
	vals := make([]float32, 6)
	dtype.ToF32(vals, w.DType, w.Data)
	if w.DType != dtype.F32 || !slices.Equal(w.Shape, []int{2, 3}) || !slices.Equal(vals, []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("weight = %+v, values %v", w, vals)
	}
	h := f.Tensors["half"]
	hv := make([]float64, 2)
	dtype.ToF64(hv, h.DType, h.Data)
	if h.DType != dtype.F16 || hv[0] != 1 || hv[1] != 65504 {
		t.Errorf("half = %v (%v)", hv, h.DType)
	}
	e := f.Tensors["emb"]
	dtype.ToF64(hv, e.DType, e.Data)
	if e.DType != dtype.BF16 || hv[0] != 1 || hv[1] != -2 {
		t.Errorf("emb = %v (%v)", hv, e.DType)
	}
	s := f.Tensors["step"]
	if s.DType != dtype.I64 || len(s.Shape) != 0 || binary.LittleEndian.Uint64(s.Data) != 1000 {
		t.Errorf("step = %+v", s)
	}
	if m := f.Tensors["mask"]; m.Kind != "U8" || m.DType != dtype.Invalid || !bytes.Equal(m.Data, []byte{0, 1, 2, 255}) {
		t.Errorf("mask = %+v", m)
	}
	if b := f.Tensors["flag"]; b.Kind != "BOOL" || b.DType != dtype.Invalid || !bytes.Equal(b.Data, []byte{1}) {
		t.Errorf("flag = %+v", b)
	}
	// Shuffled names, then Sort: Encode reproduces the reference bytes.
	f.Names = []string{"flag", "weight", "mask", "step", "half", "bias", "emb"}
	f.Sort()
	if got := encode(t, f); !bytes.Equal(got, file) {
		t.Errorf("Sort+Encode differs from the reference layout:\n%q\nwant\n%q", got, file)
	}
}

// Names and metadata are escaped as serde_json escapes them, and come back
// unchanged.
func TestEncodeEscapes(t *testing.T) {
	name := "a\"b\\c\nd\te\x01f\x7f/é\u2028<>&"
	f := &safetensors.File{
		Names:    []string{name},
		Tensors:  map[string]safetensors.Tensor{name: {DType: dtype.I8, Shape: []int{1}, Data: []byte{7}}},
		Metadata: map[string]string{"k\b\f\r": "v\x1f"},
	}
	b := encode(t, f)
	hlen := binary.LittleEndian.Uint64(b)
	h := string(b[8 : 8+hlen])
	for _, want := range []string{`"a\"b\\c\nd\te\u0001f` + "\x7f/é\u2028<>&" + `"`, `"k\b\f\r":"v\u001f"`} {
		if !strings.Contains(h, want) {
			t.Errorf("header %q does not contain %q", h, want)
		}
	}
	back, err := safetensors.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(back, f); d != "" {
		t.Errorf("round trip: %s", d)
	}
}

func TestEncodeRejects(t *testing.T) {
	ok := func() *safetensors.File {
		return &safetensors.File{Names: []string{"x"}, Tensors: map[string]safetensors.Tensor{
			"x": {DType: dtype.F32, Shape: []int{2}, Data: make([]byte, 8)}}}
	}
	with := func(edit func(f *safetensors.File)) *safetensors.File { f := ok(); edit(f); return f }
	set := func(n string, t safetensors.Tensor) func(*safetensors.File) {
		return func(f *safetensors.File) { f.Tensors[n] = t }
	}
	cases := []struct {
		f    *safetensors.File
		want string
	}{
		{nil, "nil *File"},
		{with(func(f *safetensors.File) { f.Names = nil }), "Names lists 0 names but Tensors holds 1"},
		{with(func(f *safetensors.File) { f.Names = []string{"y"} }), `Names[0] "y" is not in Tensors`},
		{with(func(f *safetensors.File) { f.Names = []string{"x", "x"}; f.Tensors["z"] = f.Tensors["x"] }), `lists "x" twice`},
		{with(set("x", safetensors.Tensor{DType: dtype.F32, Shape: []int{3}, Data: make([]byte, 8)})),
			`tensor "x": 8 bytes of data, but shape [3] of F32 needs 12`},
		{with(set("x", safetensors.Tensor{Shape: []int{2}, Data: make([]byte, 8)})), `tensor "x": no Kind and no valid DType`},
		{with(set("x", safetensors.Tensor{Kind: "F31", Shape: []int{2}, Data: make([]byte, 8)})), `unknown dtype "F31"`},
		{with(set("x", safetensors.Tensor{Kind: "I32", DType: dtype.F32, Shape: []int{2}, Data: make([]byte, 8)})),
			"Kind I32 and DType f32 disagree"},
		{with(set("x", safetensors.Tensor{DType: dtype.F32, Shape: []int{-1, 2}})), "negative dimension"},
		{with(set("x", safetensors.Tensor{DType: dtype.F32, Shape: []int{math.MaxInt / 2, 4}})), "overflows"},
		{with(set("x", safetensors.Tensor{Kind: "F4", Shape: []int{3}, Data: make([]byte, 2)})), "12 bits is not a whole number of bytes"},
		{with(func(f *safetensors.File) {
			f.Names, f.Tensors = []string{"__metadata__"}, map[string]safetensors.Tensor{"__metadata__": f.Tensors["x"]}
		}), `may not be named "__metadata__"`},
		{with(func(f *safetensors.File) {
			f.Names, f.Tensors = []string{"\xff"}, map[string]safetensors.Tensor{"\xff": f.Tensors["x"]}
		}), "not valid UTF-8"},
		{with(func(f *safetensors.File) { f.Metadata = map[string]string{"k": "\xfe"} }), "not valid UTF-8"},
	}
	for i, c := range cases {
		var b bytes.Buffer
		err := safetensors.Encode(&b, c.f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: Encode error %v, want one containing %q", i, err, c.want)
			continue
		}
		if b.Len() != 0 {
			t.Errorf("case %d: %d bytes written before the error", i, b.Len())
		}
		t.Logf("case %d: %v", i, err)
	}
}
