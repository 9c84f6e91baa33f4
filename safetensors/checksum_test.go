package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/safetensors"
)

// crc32c is a bitwise CRC-32C (reflected polynomial 0x82F63B78), the
// reference the package's table-driven hash/crc32 is checked against.
func crc32c(b []byte) uint32 {
	crc := ^uint32(0)
	for _, c := range b {
		crc ^= uint32(c)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0x82f63b78
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}

// checked returns a file with checksums: an F32 matrix, an I64 scalar, an
// empty BF16 tensor and one metadata key.
func checked() *safetensors.File {
	f := &safetensors.File{Tensors: map[string]safetensors.Tensor{
		"w": {DType: dtype.F32, Shape: []int{2, 2}, Data: dtype.Bytes([]float32{1, -2, 3.5, 4})},
		"n": {DType: dtype.I64, Shape: []int{}, Data: dtype.Bytes([]int64{7})},
		"e": {DType: dtype.BF16, Shape: []int{0, 3}, Data: []byte{}},
	}, Metadata: map[string]string{"step": "123"}}
	f.Sort()
	f.SetChecksums()
	return f
}

// The checksums are the CRC-32C of what the documentation says: the type
// and shape as text then the data, and the length-prefixed sorted
// metadata.
func TestChecksumDefinition(t *testing.T) {
	if got := crc32c([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("reference CRC-32C of the check string = %08x, want e3069283", got)
	}
	w := safetensors.Tensor{DType: dtype.F32, Shape: []int{2, 2}, Data: dtype.Bytes([]float32{1, -2, 3.5, 4})}
	if got, want := w.Checksum(), crc32c(append([]byte("F32[2,2]"), w.Data...)); got != want {
		t.Errorf("F32 [2 2]: Checksum %08x, want %08x", got, want)
	}
	s := safetensors.Tensor{Kind: "U8", Shape: []int{}, Data: []byte{9}}
	if got, want := s.Checksum(), crc32c([]byte("U8[]\x09")); got != want {
		t.Errorf("U8 scalar: Checksum %08x, want %08x", got, want)
	}
	md := map[string]string{"b": "22", "a": "1", safetensors.ChecksumPrefix + "x": "ignored"}
	var want []byte
	for _, s := range []string{"a", "1", "b", "22"} {
		want = binary.LittleEndian.AppendUint64(want, uint64(len(s)))
		want = append(want, s...)
	}
	if got := safetensors.MetadataSum(md); got != crc32c(want) {
		t.Errorf("MetadataSum %08x, want %08x", got, crc32c(want))
	}
	if got := safetensors.MetadataSum(nil); got != 0 {
		t.Errorf("MetadataSum(nil) = %08x, want 0 (the CRC of no bytes)", got)
	}
}

// Encode writes each checksum as a metadata string; Decode verifies them,
// moves them to Checksums and leaves the user's metadata alone.
func TestChecksumsRoundTrip(t *testing.T) {
	f := checked()
	b := encode(t, f)
	for name, tn := range f.Tensors {
		key := fmt.Sprintf(`"%s%s":"%08x"`, safetensors.ChecksumPrefix, name, crc32c(append([]byte(kindOf(tn)+shapeText(tn.Shape)), tn.Data...)))
		if !bytes.Contains(b, []byte(key)) {
			t.Errorf("header lacks %s:\n%s", key, b)
		}
	}
	g, err := safetensors.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(f, g); d != "" {
		t.Errorf("decoded file differs: %s", d)
	}
	if len(g.Metadata) != 1 || g.Metadata["step"] != "123" {
		t.Errorf("decoded metadata %v, want only step=123", g.Metadata)
	}
	if !maps.Equal(g.Checksums, f.Checksums) || len(g.Checksums) != 4 {
		t.Errorf("decoded checksums %v, want %v (3 tensors and the metadata)", g.Checksums, f.Checksums)
	}
	if again := encode(t, g); !bytes.Equal(again, b) {
		t.Errorf("re-encoding the decoded file changed its bytes")
	}
	plain := checked()
	plain.Checksums = nil
	h, err := safetensors.Decode(encode(t, plain))
	if err != nil || h.Checksums != nil {
		t.Errorf("a file without checksums: error %v, checksums %v; want it to decode unverified", err, h.Checksums)
	}
}

func shapeText(shape []int) string {
	return strings.ReplaceAll(fmt.Sprint(shape), " ", ",")
}

// Every single-byte change of a file with checksums (each bit flipped,
// and the byte inverted) at every position fails to decode; a change in a
// tensor's data is a *ChecksumError naming that tensor. (None of these
// changes turns a padding space into other JSON white space, the one
// change a reader may accept: it alters nothing.)
func TestChecksumsCatchEveryByteChange(t *testing.T) {
	f := checked()
	b := encode(t, f)
	hlen := int(binary.LittleEndian.Uint64(b))
	owner := make([]string, len(b)) // the tensor each data byte belongs to
	at := 8 + hlen
	for _, name := range f.Names {
		for range f.Tensors[name].Data {
			owner[at] = name
			at++
		}
	}
	rejected := 0
	for i := range b {
		for _, x := range []byte{1, 2, 4, 8, 16, 32, 64, 128, 255} {
			c := bytes.Clone(b)
			c[i] ^= x
			_, err := safetensors.Decode(c)
			var ce *safetensors.ChecksumError
			switch {
			case err == nil:
				t.Fatalf("byte %d (%q) ^ %#x: decoded without error", i, b[i], x)
			case owner[i] != "" && (!errors.As(err, &ce) || ce.Tensor != owner[i] || !strings.Contains(err.Error(), `"`+owner[i]+`"`)):
				t.Fatalf("byte %d of tensor %q ^ %#x: error %v, want a *ChecksumError naming it", i, owner[i], x, err)
			}
			rejected++
		}
	}
	t.Logf("%d-byte file (header %d): all %d changes rejected", len(b), hlen, rejected)
	c := bytes.Clone(b)
	c[8+hlen] ^= 1
	_, err := safetensors.Decode(c)
	t.Logf("first data byte flipped: %v", err)
}

// Checksums that are malformed, partial or about tensors the file lacks
// are errors; so is a stale checksum or a reserved key given to Encode.
func TestChecksumsRejects(t *testing.T) {
	good := string(encode(t, checked()))
	hlen := binary.LittleEndian.Uint64([]byte(good))
	header := good[8 : 8+hlen]
	data := good[8+hlen:]
	sum := func(name string) string {
		return fmt.Sprintf(`"%s%s":"%08x"`, safetensors.ChecksumPrefix, name, checked().Checksums[name])
	}
	for _, c := range []struct{ old, new, want string }{
		{sum("n"), `"headroom.crc32c.n":"zz"`, `want a CRC-32C as 8 lower-case hexadecimal digits`},
		{sum("n"), `"headroom.crc32c.n":"+1234567"`, `want a CRC-32C as 8 lower-case hexadecimal digits`},
		{sum("n"), `"headroom.crc32c.n":"5D3C03B8"`, `want a CRC-32C as 8 lower-case hexadecimal digits`},
		{sum("n") + ",", "", `tensor "n" has none`},
		{sum(safetensors.MetadataKey) + ",", "", `the metadata has none`},
		{sum("n"), sum("n") + `,"headroom.crc32c.gone":"00000000"`, `checksum of a tensor "gone" the file does not hold`},
		{`"step":"123"`, `"step":"124"`, `the metadata has CRC-32C`},
	} {
		if !strings.Contains(header, c.old) {
			t.Fatalf("header lacks %s: %s", c.old, header)
		}
		h := strings.Replace(header, c.old, c.new, 1)
		h += strings.Repeat(" ", (8-len(h)%8)%8)
		_, err := safetensors.Decode(framed(h, []byte(data)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: error %v, want one containing %q", c.old, c.new, err, c.want)
			continue
		}
		t.Logf("%s → %s: %v", c.old, c.new, err)
	}
	for _, c := range []struct {
		edit func(f *safetensors.File)
		want string
	}{
		{func(f *safetensors.File) { f.Tensors["w"].Data[0] ^= 1 }, `tensor "w": its type, shape and data have CRC-32C`},
		{func(f *safetensors.File) { f.Metadata["epoch"] = "1" }, "the metadata has CRC-32C"},
		{func(f *safetensors.File) { delete(f.Checksums, "w") }, `tensor "w" has none`},
		{func(f *safetensors.File) { f.Checksums["x"] = 1 }, `tensor "x" the file does not hold`},
		{func(f *safetensors.File) { f.Metadata[safetensors.ChecksumPrefix+"w"] = "00000000" }, "is reserved for File.Checksums"},
	} {
		f := checked()
		c.edit(f)
		var b bytes.Buffer
		err := safetensors.Encode(&b, f)
		if err == nil || !strings.Contains(err.Error(), c.want) || b.Len() != 0 {
			t.Errorf("Encode: error %v after %d bytes, want one containing %q before any", err, b.Len(), c.want)
			continue
		}
		t.Logf("Encode: %v", err)
	}
}
