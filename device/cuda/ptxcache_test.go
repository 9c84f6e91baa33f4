package cuda

import (
	"bytes"
	"testing"
)

// TestPTXCacheChecksum: a sealed PTX file reads back as the PTX; a file
// with one byte changed, cut short, or without its checksum line reads as
// absent (so it is compiled again, never loaded).
func TestPTXCacheChecksum(t *testing.T) {
	ptx := []byte(".version 7.8\n.target sm_90\n.visible .entry fill_f32(\n)\n{\n\tret;\n}\n")
	sealed := sealPTX(ptx)
	if got := checkedPTX(sealed); !bytes.Equal(got, ptx) {
		t.Fatalf("sealed PTX read back as %q, want %q", got, ptx)
	}
	flipped := bytes.Clone(sealed)
	flipped[20] ^= 1
	for name, b := range map[string][]byte{
		"one byte changed": flipped,
		"cut short":        sealed[:len(sealed)-10],
		"PTX cut short":    append(bytes.Clone(ptx[:30]), sealed[len(ptx):]...),
		"no checksum line": ptx,
	} {
		if got := checkedPTX(b); got != nil {
			t.Errorf("%s: read as %d bytes of PTX, want it refused", name, len(got))
		}
	}
}
