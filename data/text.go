package data

import (
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Sequence is a token stream that language-model training draws windows
// from: *Text and *Tokens.
type Sequence interface {
	Len() int   // tokens in the stream
	Vocab() int // token ids are in [0, Vocab)
	// Batch draws b windows of t tokens: x (B, T) and the targets y (B, T),
	// y being x shifted one token on.
	Batch(rng *rand.Rand, b, t int) (x, y []int64)
}

// Text is a byte-level corpus: each byte is a token, so the vocabulary is
// the 256 byte values and a corpus of n bytes costs n bytes of memory.
type Text struct {
	Bytes []byte
}

// LoadText reads a byte-level corpus. path may name a file, read whole, or a
// folder, whose regular files (at any depth, skipping names that start with
// '.', such as .git) are sorted by path and concatenated with a '\n' between
// files. When path is "", the corpus is the Go standard library's source:
// every *.go file under $GOROOT/src (about 100 MB), GOROOT being
// runtime.GOROOT() or else what `go env GOROOT` prints. An empty corpus is
// an error.
func LoadText(path string) (*Text, error) {
	if path == "" {
		root, err := goSourceRoot()
		if err != nil {
			return nil, err
		}
		return loadTextTree(root, ".go")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("data.LoadText: %w", err)
	}
	if fi.IsDir() {
		return loadTextTree(path, "")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("data.LoadText: %w", err)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("data.LoadText: %s is empty", path)
	}
	return &Text{Bytes: b}, nil
}

// loadTextTree concatenates the regular files under root whose names end
// with suffix.
func loadTextTree(root, suffix string) (*Text, error) {
	var files []string
	size := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(d.Name(), suffix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, p)
		size += int(fi.Size()) + 1
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("data.LoadText: %w", err)
	}
	slices.Sort(files)
	buf := make([]byte, 0, size)
	for i, p := range files {
		if i > 0 {
			buf = append(buf, '\n')
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("data.LoadText: %w", err)
		}
		buf = append(buf, b...)
	}
	if len(buf) == 0 {
		what := "files"
		if suffix != "" {
			what = "*" + suffix + " files"
		}
		return nil, fmt.Errorf("data.LoadText: %s holds no %s with any content", root, what)
	}
	return &Text{Bytes: buf}, nil
}

// goSourceRoot returns $GOROOT/src.
func goSourceRoot() (string, error) {
	if r := runtime.GOROOT(); r != "" {
		if fi, err := os.Stat(filepath.Join(r, "src")); err == nil && fi.IsDir() {
			return filepath.Join(r, "src"), nil
		}
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	r := strings.TrimSpace(string(out))
	if err != nil || r == "" {
		return "", fmt.Errorf("data.LoadText: no path given and the Go source tree was not found (runtime.GOROOT() is unset and `go env GOROOT` failed: %v); pass a file or folder", err)
	}
	return filepath.Join(r, "src"), nil
}

// Len returns the number of tokens (bytes).
func (tx *Text) Len() int { return len(tx.Bytes) }

// Vocab returns 256.
func (tx *Text) Vocab() int { return 256 }

// Split cuts the corpus into a training part and a validation part, the
// last ⌊valFraction·Len⌋ bytes, sharing its memory. It panics unless
// 0 ≤ valFraction ≤ 1.
func (tx *Text) Split(valFraction float64) (train, val *Text) {
	cut := splitPoint("Text", len(tx.Bytes), valFraction)
	return &Text{Bytes: tx.Bytes[:cut:cut]}, &Text{Bytes: tx.Bytes[cut:]}
}

// Slice returns the corpus's bytes [⌊lo·Len⌋, ⌊hi·Len⌋), sharing its
// memory: a fraction of a corpus, such as the Go source tree sorted by
// path, to train or fine-tune on apart from the rest. It panics unless
// 0 ≤ lo < hi ≤ 1.
func (tx *Text) Slice(lo, hi float64) *Text {
	if !(lo >= 0 && lo < hi && hi <= 1) {
		panic(fmt.Sprintf("data.Text.Slice(%v, %v): want 0 ≤ lo < hi ≤ 1", lo, hi))
	}
	n := float64(len(tx.Bytes))
	a, b := int(math.Floor(lo*n)), int(math.Floor(hi*n))
	return &Text{Bytes: tx.Bytes[a:b:b]}
}

// SplitSpread holds out ⌊valFraction·Len⌋ bytes for validation as
// m = ⌈that/chunk⌉ pieces of (nearly) equal size, piece j centred in the
// j-th of m equal stretches of the corpus (moved only as far as the pieces
// need to fit when nearly all is held out), so that validation samples the
// whole corpus rather than its end. The Go source tree sorted by path ends
// with Unicode normalisation tables, whose last 1% a model predicts far
// better than Go code: Split's held-out tail would flatter it. Both parts
// are new copies, the pieces concatenated in order. It panics unless
// 0 ≤ valFraction ≤ 1 and chunk > 0.
func (tx *Text) SplitSpread(valFraction float64, chunk int) (train, val *Text) {
	n := len(tx.Bytes)
	v := n - splitPoint("Text", n, valFraction)
	if chunk <= 0 {
		panic(fmt.Sprintf("data.Text.SplitSpread(%v, %d): the chunk must be positive", valFraction, chunk))
	}
	m := (v + chunk - 1) / chunk
	tr, va := make([]byte, 0, n-v), make([]byte, 0, v)
	at := 0
	for j := range m {
		size := v*(j+1)/m - v*j/m
		lo, hi := n*j/m, n*(j+1)/m
		// Centred in its stretch, unless that would overlap the piece before
		// or leave too little room for the pieces after (a piece can be
		// longer than its stretch when nearly everything is held out).
		start := min(max(lo+(hi-lo-size)/2, at), n-v+v*j/m)
		tr = append(tr, tx.Bytes[at:start]...)
		va = append(va, tx.Bytes[start:start+size]...)
		at = start + size
	}
	tr = append(tr, tx.Bytes[at:]...)
	return &Text{Bytes: tr}, &Text{Bytes: va}
}

// Batch draws b windows of t+1 consecutive bytes, each starting at a
// position uniform over the corpus, and returns their first t bytes as x
// (B, T) and their last t as the targets y (B, T): y[i·t+j] = x[i·t+j+1]
// within a window. It uses one rng.IntN per window. It panics unless b and
// t are positive and the corpus has at least t+1 bytes.
func (tx *Text) Batch(rng *rand.Rand, b, t int) (x, y []int64) {
	return windows("Text", tx.Bytes, rng, b, t)
}

// windows draws b windows of t+1 tokens from data.
func windows[T byte | int32](what string, data []T, rng *rand.Rand, b, t int) (x, y []int64) {
	if b <= 0 || t <= 0 {
		panic(fmt.Sprintf("data.%s.Batch(b=%d, t=%d): b and t must be positive", what, b, t))
	}
	if len(data) < t+1 {
		panic(fmt.Sprintf("data.%s.Batch(b=%d, t=%d): a window needs t+1 = %d tokens, the sequence has %d", what, b, t, t+1, len(data)))
	}
	x = make([]int64, b*t)
	y = make([]int64, b*t)
	for i := range b {
		s := rng.IntN(len(data) - t)
		for j := range t {
			x[i*t+j] = int64(data[s+j])
			y[i*t+j] = int64(data[s+j+1])
		}
	}
	return x, y
}

// splitPoint returns where the validation part of n tokens starts.
func splitPoint(what string, n int, valFraction float64) int {
	if !(valFraction >= 0 && valFraction <= 1) {
		panic(fmt.Sprintf("data.%s.Split(%v): the validation fraction must be in [0, 1]", what, valFraction))
	}
	return n - int(math.Floor(valFraction*float64(n)))
}
