package data

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzReadCIFAR reads a CIFAR-10 binary file made of arbitrary bytes
// followed by records with the given labels, then cut or extended by cut
// bytes. The file loads exactly when the format allows it (a whole, non-zero
// number of 3073-byte records, each label 0-9), and then into the labels
// and pixels the format puts there; otherwise the error is a *FormatError
// naming the file. It never panics.
func FuzzReadCIFAR(f *testing.F) {
	f.Add([]byte{}, []byte{3, 9}, int16(0))
	f.Add([]byte{}, []byte{10}, int16(0))
	f.Add([]byte{}, []byte{1}, int16(-1))
	f.Add([]byte{}, []byte{1}, int16(1))
	f.Add([]byte{}, []byte{}, int16(0))
	f.Add([]byte{7}, []byte{}, int16(cifarPixels))
	f.Add([]byte{255, 1, 2}, []byte{0}, int16(-3))
	dir := f.TempDir()
	path := filepath.Join(dir, "x.bin")
	f.Fuzz(func(t *testing.T, raw, labels []byte, cut int16) {
		if len(labels) > 4 {
			labels = labels[:4]
		}
		b := slices.Clone(raw)
		for r, l := range labels {
			b = append(b, l)
			for i := range cifarPixels {
				b = append(b, byte(i*7+r))
			}
		}
		if cut >= 0 {
			b = append(b, bytes.Repeat([]byte{0xab}, int(cut)%cifarRecord)...)
		} else {
			b = b[:max(0, len(b)-int(-cut)%cifarRecord)]
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := readCIFARFiles(dir, []string{"x.bin"})
		valid := len(b) > 0 && len(b)%cifarRecord == 0
		for i := 0; valid && i < len(b); i += cifarRecord {
			valid = b[i] <= 9
		}
		var fe *FormatError
		switch {
		case valid && err != nil:
			t.Fatalf("%d bytes of valid records: %v", len(b), err)
		case !valid && (!errors.As(err, &fe) || fe.Path != path):
			t.Fatalf("%d bytes, not valid: error %v, want a *FormatError naming %s", len(b), err, path)
		case !valid:
			return
		}
		n := len(b) / cifarRecord
		if m.N != n || len(m.Labels) != n || len(m.Pixels) != n*cifarPixels || m.C != 3 || m.H != 32 || m.W != 32 {
			t.Fatalf("%d records read as N=%d %d×%d×%d with %d labels and %d pixels", n, m.N, m.C, m.H, m.W, len(m.Labels), len(m.Pixels))
		}
		for r := range n {
			rec := b[r*cifarRecord : (r+1)*cifarRecord]
			if m.Labels[r] != rec[0] || !bytes.Equal(m.Pixels[r*cifarPixels:(r+1)*cifarPixels], rec[1:]) {
				t.Fatalf("record %d read wrong", r)
			}
		}
	})
}

// FuzzLoadText loads a corpus cut into the 4 files of a folder (their
// lengths from cuts; a hidden file beside them) and as one file: the folder
// reads as its files in name order joined by '\n', the file as its bytes,
// and an empty corpus is an error. (Each run writes 5 files: about 400 runs
// a second, so -fuzzminimizetime 5s keeps it fuzzing.)
func FuzzLoadText(f *testing.F) {
	f.Add([]byte("package main\n"), []byte{3, 0, 200})
	f.Add([]byte{}, []byte{})
	f.Add([]byte("ab"), []byte{1})
	f.Add([]byte{0, 255, '\n'}, []byte{9, 9, 9, 9})
	root := f.TempDir()
	dir := filepath.Join(root, "corpus")
	if err := os.Mkdir(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	writeFile(f, dir, ".hidden", []byte("not part of the corpus"))
	whole := filepath.Join(root, "whole.txt")
	f.Fuzz(func(t *testing.T, content, cuts []byte) {
		lens := append(cuts[:min(len(cuts), 3):min(len(cuts), 3)], 0, 0, 0)[:3]
		pieces := cutPieces(content, lens)
		for i, p := range pieces {
			writeFile(t, dir, fmt.Sprintf("%d.txt", i), p)
		}
		writeFile(t, root, "whole.txt", content)
		for path, want := range map[string][]byte{dir: bytes.Join(pieces, []byte{'\n'}), whole: content} {
			tx, err := LoadText(path)
			switch {
			case len(want) == 0 && err == nil:
				t.Fatalf("LoadText(%s) of an empty corpus: no error", path)
			case len(want) > 0 && err != nil:
				t.Fatalf("LoadText(%s): %v", path, err)
			case len(want) > 0 && !bytes.Equal(tx.Bytes, want):
				t.Fatalf("LoadText(%s) = %q, want %q", path, tx.Bytes, want)
			}
		}
	})
}

// FuzzTextSplit checks, on any corpus, that SplitSpread keeps every byte
// in one part or the other, ⌊fraction·n⌋ of them for validation, and that
// Batch draws windows of the corpus whose targets are the inputs shifted by
// one. (It found SplitSpread panicking when nearly all is held out.)
func FuzzTextSplit(f *testing.F) {
	f.Add([]byte("package main\n"), uint16(6553), uint8(4))
	f.Add([]byte{}, uint16(0), uint8(0))
	f.Add([]byte("ab"), uint16(65535), uint8(0))
	f.Add([]byte("abcdefghijklmnopqr"), uint16(65404), uint8(3))
	f.Fuzz(func(t *testing.T, content []byte, frac uint16, chunk uint8) {
		checkText(t, &Text{Bytes: content}, float64(frac)/math.MaxUint16, int(chunk)+1)
	})
}

// cutPieces cuts b into consecutive pieces of the lengths in cuts (the
// rest is the last piece).
func cutPieces(b, cuts []byte) [][]byte {
	var out [][]byte
	for _, c := range cuts {
		n := min(int(c), len(b))
		out = append(out, b[:n])
		b = b[n:]
	}
	return append(out, b)
}

// checkText checks SplitSpread and Batch on a loaded corpus.
func checkText(t *testing.T, tx *Text, frac float64, chunk int) {
	n := tx.Len()
	tr, va := tx.SplitSpread(frac, chunk)
	if want := int(math.Floor(frac * float64(n))); va.Len() != want || tr.Len()+va.Len() != n {
		t.Fatalf("SplitSpread(%v, %d) of %d bytes: %d + %d, want %d held out", frac, chunk, n, tr.Len(), va.Len(), want)
	}
	var count [256]int
	for _, c := range tx.Bytes {
		count[c]++
	}
	for _, c := range slices.Concat(tr.Bytes, va.Bytes) {
		count[c]--
	}
	if count != [256]int{} {
		t.Fatalf("SplitSpread(%v, %d) lost or made up bytes", frac, chunk)
	}
	if n < 2 {
		return
	}
	tl := 1 + chunk%(n-1)
	x, y := tx.Batch(rand.New(rand.NewPCG(1, 2)), 2, tl)
	for w := range 2 {
		win := make([]byte, 0, tl+1)
		for _, v := range x[w*tl : (w+1)*tl] {
			win = append(win, byte(v))
		}
		win = append(win, byte(y[(w+1)*tl-1]))
		if !bytes.Contains(tx.Bytes, win) || !slices.Equal(x[w*tl+1:(w+1)*tl], y[w*tl:(w+1)*tl-1]) {
			t.Fatalf("Batch window %d of length %d is not a shifted piece of the corpus", w, tl)
		}
	}
}
