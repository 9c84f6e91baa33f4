package data

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoadTextFolder(t *testing.T) {
	dir := t.TempDir()
	for p, s := range map[string]string{
		"b.txt":       "bee",
		"a/z.txt":     "a-z",
		"a-c.txt":     "a-c", // sorts before a/z.txt: '-' < '/'
		".hidden":     "secret",
		".git/config": "git",
		"c/.d/e.txt":  "hidden folder",
		"c/empty.txt": "",
	} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Dir(full), filepath.Base(full), []byte(s))
	}
	if err := os.Symlink(filepath.Join(dir, "b.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Logf("no symlink: %v", err)
	}
	tx, err := LoadText(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(tx.Bytes), "a-c\na-z\nbee\n"; got != want { // empty.txt adds a separator only
		t.Errorf("LoadText(folder) = %q, want %q", got, want)
	}
	one, err := LoadText(filepath.Join(dir, "b.txt"))
	if err != nil || string(one.Bytes) != "bee" || one.Len() != 3 || one.Vocab() != 256 {
		t.Errorf("LoadText(file) = %+v, %v; want \"bee\"", one, err)
	}
	if _, err := LoadText(filepath.Join(dir, "c", "empty.txt")); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("LoadText(empty file) error = %v, want one saying empty", err)
	}
	if _, err := LoadText(filepath.Join(dir, "nope")); err == nil || !os.IsNotExist(err) && !strings.Contains(err.Error(), "nope") {
		t.Errorf("LoadText(missing) error = %v, want one naming the path", err)
	}
	if _, err := LoadText(filepath.Join(dir, ".git")); err != nil {
		t.Errorf("LoadText(.git) itself: %v (a hidden root is read)", err)
	}
}

// TestLoadTextGoSource checks the default corpus's parts: the Go source
// root is found, and a tree is read as its *.go files only. (Reading all of
// $GOROOT/src takes about a second with a warm file cache and ten cold, so
// BenchmarkLoadTextGoSource does that.)
func TestLoadTextGoSource(t *testing.T) {
	root, err := goSourceRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "fmt", "print.go")); err != nil {
		t.Fatalf("goSourceRoot() = %s, which lacks fmt/print.go: %v", root, err)
	}
	// regexp holds Go files in two folders and non-Go files in testdata
	// (re2-search.txt, testregex.c) that must be left out.
	dir := filepath.Join(root, "regexp")
	tx, err := loadTextTree(dir, ".go")
	if err != nil {
		t.Fatal(err)
	}
	want := -1 // one '\n' between files
	for _, pattern := range []string{"*.go", "syntax/*.go"} {
		files, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, f := range files {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			want += int(fi.Size()) + 1
		}
	}
	t.Logf("%s: %d bytes of Go", dir, tx.Len())
	if tx.Len() != want {
		t.Errorf("regexp corpus has %d bytes, want %d (its *.go files and separators)", tx.Len(), want)
	}
	if !bytes.HasPrefix(tx.Bytes, []byte("// Copyright")) || !bytes.Contains(tx.Bytes, []byte("package syntax")) {
		t.Errorf("regexp corpus does not start with a Go file or lacks regexp/syntax")
	}
}

func BenchmarkLoadTextGoSource(b *testing.B) {
	for b.Loop() {
		tx, err := LoadText("")
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(tx.Len()))
	}
}

func TestTextSplitSpread(t *testing.T) {
	tx := &Text{Bytes: []byte("0123456789")}
	for _, c := range []struct {
		f          float64
		chunk      int
		train, val string
	}{
		{0.2, 1, "01345689", "27"}, // two pieces of 1, centred in 0–4 and 5–9
		{0.2, 2, "01236789", "45"}, // one piece of 2, centred: starts at (10−2)/2
		{0.3, 1, "0235689", "147"}, // stretches [0,3) [3,6) [6,10), one byte centred in each
		{0.4, 3, "034589", "1267"}, // two pieces of 2 in [0,5) and [5,10)
		{0, 4, "0123456789", ""},
		{1, 3, "", "0123456789"},
	} {
		tr, va := tx.SplitSpread(c.f, c.chunk)
		if string(tr.Bytes) != c.train || string(va.Bytes) != c.val {
			t.Errorf("SplitSpread(%v, %d) = %q, %q; want %q, %q", c.f, c.chunk, tr.Bytes, va.Bytes, c.train, c.val)
		}
	}
	// Nearly everything held out: 17 bytes in pieces of 3, 3, 4, 3, 4, the
	// third longer than its stretch [7, 10), so the pieces shift to fit
	// (FuzzLoadText found this panicking: slice bounds out of range).
	long := &Text{Bytes: []byte("abcdefghijklmnopqr")}
	if tr, va := long.SplitSpread(0.998, 4); string(tr.Bytes) != "g" || string(va.Bytes) != "abcdefhijklmnopqr" {
		t.Errorf("SplitSpread(0.998, 4) of 18 bytes = %q, %q; want \"g\", \"abcdefhijklmnopqr\"", tr.Bytes, va.Bytes)
	}
	// A large corpus: the pieces cover the whole range, sizes add up, and
	// every byte lands in exactly one part.
	big := make([]byte, 1<<20+17)
	for i := range big {
		big[i] = byte(i * 7 % 251)
	}
	tr, va := (&Text{Bytes: big}).SplitSpread(0.01, 1000)
	if want := int(0.01 * float64(len(big))); va.Len() != want || tr.Len()+va.Len() != len(big) {
		t.Fatalf("SplitSpread(0.01, 1000) of %d bytes: train %d + val %d, want val %d and all bytes", len(big), tr.Len(), va.Len(), want)
	}
	var hist [251]int
	for _, b := range tr.Bytes {
		hist[b]++
	}
	for _, b := range va.Bytes {
		hist[b]++
	}
	var want [251]int
	for _, b := range big {
		want[b]++
	}
	if hist != want {
		t.Error("SplitSpread lost or duplicated bytes")
	}
	for _, c := range []struct {
		f     float64
		chunk int
	}{{-0.1, 1}, {0.1, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SplitSpread(%v, %d) did not panic", c.f, c.chunk)
				}
			}()
			tx.SplitSpread(c.f, c.chunk)
		}()
	}
}

func TestTextSplit(t *testing.T) {
	tx := &Text{Bytes: []byte("0123456789")}
	for _, c := range []struct {
		f          float64
		train, val string
	}{{0.1, "012345678", "9"}, {0.25, "01234567", "89"}, {0, "0123456789", ""}, {1, "", "0123456789"}} {
		tr, va := tx.Split(c.f)
		if string(tr.Bytes) != c.train || string(va.Bytes) != c.val {
			t.Errorf("Split(%v) = %q, %q; want %q, %q", c.f, tr.Bytes, va.Bytes, c.train, c.val)
		}
	}
	tr, _ := tx.Split(0.5)
	if cap(tr.Bytes) != 5 {
		t.Errorf("train part has capacity %d, want 5 (appending must not overwrite the validation part)", cap(tr.Bytes))
	}
	for _, f := range []float64{-0.1, 1.5, math.NaN()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Split(%v) did not panic", f)
				}
			}()
			tx.Split(f)
		}()
	}
}

// TestTextSlice: Slice(lo, hi) is bytes [⌊lo·n⌋, ⌊hi·n⌋), slices that
// meet at a cut cover the corpus once, appending to one does not write
// into the next, and bounds outside 0 ≤ lo < hi ≤ 1 panic.
func TestTextSlice(t *testing.T) {
	tx := &Text{Bytes: []byte("0123456789")}
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{{0, 1, "0123456789"}, {0, 0.8, "01234567"}, {0.8, 1, "89"}, {0.25, 0.55, "234"}, {0.05, 0.09, ""}} {
		if got := string(tx.Slice(c.lo, c.hi).Bytes); got != c.want {
			t.Errorf("Slice(%v, %v) = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
	a := tx.Slice(0, 0.7)
	_ = append(a.Bytes, 'x')
	if string(tx.Bytes) != "0123456789" {
		t.Errorf("appending to a slice wrote into the corpus: %q", tx.Bytes)
	}
	for _, b := range [][2]float64{{-0.1, 0.5}, {0.5, 0.5}, {0.6, 0.4}, {0, 1.5}, {math.NaN(), 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Slice(%v, %v) did not panic", b[0], b[1])
				}
			}()
			tx.Slice(b[0], b[1])
		}()
	}
}

func TestTextBatch(t *testing.T) {
	corpus := make([]byte, 200)
	for i := range corpus {
		corpus[i] = byte(i) // each byte gives its position
	}
	tx := &Text{Bytes: corpus}
	const b, tl = 4, 7
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[int]bool{}
	for range 2000 {
		x, y := tx.Batch(rng, b, tl)
		if len(x) != b*tl || len(y) != b*tl {
			t.Fatalf("Batch(%d, %d) lengths %d, %d, want %d", b, tl, len(x), len(y), b*tl)
		}
		for i := range b {
			s := int(x[i*tl])
			seen[s] = true
			for j := range tl {
				if x[i*tl+j] != int64(s+j) || y[i*tl+j] != int64(s+j+1) {
					t.Fatalf("window %d: x %v y %v are not consecutive from %d and shifted by one", i, x[i*tl:(i+1)*tl], y[i*tl:(i+1)*tl], s)
				}
			}
		}
	}
	// Every start 0 … len−t−1 occurs (y's last token is the corpus's last).
	if len(seen) != len(corpus)-tl || !seen[0] || !seen[len(corpus)-tl-1] {
		t.Errorf("windows started at %d distinct places, want all %d from 0 to %d", len(seen), len(corpus)-tl, len(corpus)-tl-1)
	}
	x1, _ := tx.Batch(rand.New(rand.NewPCG(5, 6)), 3, 5)
	x2, _ := tx.Batch(rand.New(rand.NewPCG(5, 6)), 3, 5)
	if !slices.Equal(x1, x2) {
		t.Errorf("same seed gave different batches: %v, %v", x1, x2)
	}
	func() {
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(r.(string), "needs t+1 = 201 tokens") {
				t.Errorf("Batch with t = len: panic %v, want one about t+1 tokens", r)
			}
		}()
		tx.Batch(rng, 1, 200)
	}()
}

// TestSyntheticTokens checks the chain: every transition is one of the
// token's successors, each token has exactly min(4, vocab) of them, and the
// empirical conditional entropy is ln 4.
func TestSyntheticTokens(t *testing.T) {
	const n, vocab = 400000, 16
	s := SyntheticTokens(n, vocab, 3)
	if s.Len() != n || s.Vocab() != vocab {
		t.Fatalf("Len %d Vocab %d, want %d %d", s.Len(), s.Vocab(), n, vocab)
	}
	counts := make([][vocab]int, vocab)
	for i := 1; i < n; i++ {
		if s.IDs[i] < 0 || s.IDs[i] >= vocab {
			t.Fatalf("token %d = %d outside [0, %d)", i, s.IDs[i], vocab)
		}
		counts[s.IDs[i-1]][s.IDs[i]]++
	}
	var h float64
	for v := range vocab {
		succ, total := 0, 0
		for _, c := range counts[v] {
			total += c
			if c > 0 {
				succ++
			}
		}
		if succ != SyntheticBranching {
			t.Errorf("token %d has %d successors, want %d", v, succ, SyntheticBranching)
		}
		for _, c := range counts[v] {
			if c > 0 {
				p := float64(c) / float64(total)
				h -= float64(total) / float64(n-1) * p * math.Log(p)
			}
		}
	}
	t.Logf("conditional entropy %.4f nats, ln 4 = %.4f", h, math.Log(4))
	if math.Abs(h-math.Log(4)) > 0.005 {
		t.Errorf("conditional entropy %.4f, want ln 4 = %.4f", h, math.Log(4))
	}
	again := SyntheticTokens(n, vocab, 3)
	other := SyntheticTokens(n, vocab, 4)
	if !slices.Equal(s.IDs, again.IDs) || slices.Equal(s.IDs, other.IDs) {
		t.Errorf("same seed must give the same tokens, another seed others")
	}
	small := SyntheticTokens(100, 2, 1)
	x, y := small.Batch(rand.New(rand.NewPCG(1, 1)), 2, 3)
	if len(x) != 6 || len(y) != 6 {
		t.Errorf("Batch lengths %d, %d, want 6", len(x), len(y))
	}
	tr, va := small.Split(0.2)
	if tr.Len() != 80 || va.Len() != 20 || va.Vocab() != 2 {
		t.Errorf("Split(0.2) lengths %d, %d, want 80, 20", tr.Len(), va.Len())
	}
}
