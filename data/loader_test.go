package data

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// tinySet is N images of 1×1×2 pixels: image i is (10·i, 10·i+5), label i mod 3.
func tinySet(n int) *Images {
	m := &Images{N: n, C: 1, H: 1, W: 2, Classes: 3}
	for i := range n {
		m.Pixels = append(m.Pixels, uint8(10*i), uint8(10*i+5))
		m.Labels = append(m.Labels, uint8(i%3))
	}
	return m
}

// ids recovers which tiny-set images a batch holds from their first pixel.
func ids(x []float32) []int {
	var out []int
	for i := 0; i < len(x); i += 2 {
		out = append(out, int(math.Round(float64(x[i])*255/10)))
	}
	return out
}

func TestLoaderOrderAndEpochs(t *testing.T) {
	for _, c := range []struct {
		dropLast bool
		want     [][]int
	}{
		{false, [][]int{{0, 1}, {2, 3}, {4}}},
		{true, [][]int{{0, 1}, {2, 3}}},
	} {
		l, err := NewLoader(tinySet(5), LoaderConfig{Batch: 2, DropLast: c.dropLast})
		if err != nil {
			t.Fatal(err)
		}
		if l.Batches() != len(c.want) {
			t.Errorf("DropLast %v: Batches() = %d, want %d", c.dropLast, l.Batches(), len(c.want))
		}
		for epoch := range 2 {
			for _, want := range c.want {
				x, y, ok := l.Next()
				if !ok || !slices.Equal(ids(x), want) || len(y) != len(want) {
					t.Fatalf("DropLast %v epoch %d: Next() = %v, %v, %v; want images %v", c.dropLast, epoch, ids(x), y, ok, want)
				}
				for i, id := range want {
					if y[i] != int64(id%3) || x[2*i] != float32(10*id)/255 || x[2*i+1] != float32(10*id+5)/255 {
						t.Fatalf("image %d: x %v, y %d; want %v/255, label %d", id, x[2*i:2*i+2], y[i], []int{10 * id, 10*id + 5}, id%3)
					}
				}
				if l.Epoch() != epoch {
					t.Errorf("Epoch() = %d during epoch %d", l.Epoch(), epoch)
				}
			}
			if x, y, ok := l.Next(); ok || x != nil || y != nil {
				t.Fatalf("DropLast %v: Next() at the end of epoch %d = %v, %v, %v; want nil, nil, false", c.dropLast, epoch, x, y, ok)
			}
			if l.Epoch() != epoch+1 {
				t.Errorf("Epoch() = %d after the end of epoch %d, want %d", l.Epoch(), epoch, epoch+1)
			}
		}
	}
}

func TestLoaderShuffle(t *testing.T) {
	const n = 23
	epochs := func(seed uint64) [][]int {
		l, err := NewLoader(tinySet(n), LoaderConfig{Batch: 4, Shuffle: true, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var out [][]int
		for range 3 {
			var order []int
			for x, _, ok := l.Next(); ok; x, _, ok = l.Next() {
				order = append(order, ids(x)...)
			}
			out = append(out, order)
		}
		return out
	}
	a, b, other := epochs(1), epochs(1), epochs(2)
	for e, order := range a {
		if sorted := slices.Sorted(slices.Values(order)); !slices.Equal(sorted, identity(n)) {
			t.Errorf("epoch %d order %v is not a permutation of 0..%d", e, order, n-1)
		}
		if !slices.Equal(order, b[e]) {
			t.Errorf("epoch %d: the same seed gave %v and %v", e, order, b[e])
		}
	}
	t.Logf("seed 1 epochs: %v", a)
	if slices.Equal(a[0], a[1]) || slices.Equal(a[0], identity(n)) || slices.Equal(a[0], other[0]) {
		t.Errorf("orders do not change between epochs, from the identity or with the seed")
	}
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestLoaderShuffleUniform checks that every image lands in every position
// about equally often over many epochs.
func TestLoaderShuffleUniform(t *testing.T) {
	const n, epochs = 5, 5000
	l, err := NewLoader(tinySet(n), LoaderConfig{Batch: n, Shuffle: true, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	var counts [n][n]int
	for range epochs {
		x, _, _ := l.Next()
		for pos, id := range ids(x) {
			counts[id][pos]++
		}
		l.Next()
	}
	for id := range n {
		for pos := range n {
			if c := counts[id][pos]; c < 850 || c > 1150 { // expected 1000, sd ≈ 28
				t.Errorf("image %d at position %d %d times in %d epochs, want about 1000", id, pos, c, epochs)
			}
		}
	}
}

func TestLoaderNormalise(t *testing.T) {
	m := &Images{N: 1, C: 2, H: 1, W: 3, Pixels: []uint8{0, 128, 255, 0, 51, 255}, Labels: []uint8{0}, Classes: 1}
	mean, std := []float32{0.5, 0.4914}, []float32{0.5, 0.2470}
	l, err := NewLoader(m, LoaderConfig{Mean: mean, Std: std})
	if err != nil {
		t.Fatal(err)
	}
	x, _, _ := l.Next()
	for i, p := range m.Pixels {
		c := i / 3
		want := (float64(p)/255 - float64(mean[c])) / float64(std[c])
		if math.Abs(float64(x[i])-want) > 1e-6 {
			t.Errorf("pixel %d (channel %d, value %d) = %v, want %v", i, c, p, x[i], want)
		}
	}
	if x[0] != -1 || x[2] != 1 { // exact: (0 − 0.5)/0.5 and (1 − 0.5)/0.5
		t.Errorf("with mean 0.5, std 0.5: pixels 0 and 255 give %v and %v, want −1 and 1 exactly", x[0], x[2])
	}
}

func TestNewLoaderErrors(t *testing.T) {
	bad := tinySet(3)
	bad.Labels[1] = 7
	for _, c := range []struct {
		set  *Images
		cfg  LoaderConfig
		want string
	}{
		{nil, LoaderConfig{}, "nil set"},
		{bad, LoaderConfig{}, "label 7 of image 1 is not below Classes = 3"},
		{&Images{N: 2, C: 1, H: 1, W: 2, Pixels: make([]uint8, 3), Labels: make([]uint8, 2), Classes: 1}, LoaderConfig{}, "3 pixels, want N·C·H·W = 2·1·1·2 = 4"},
		{tinySet(3), LoaderConfig{Batch: -1}, "Batch = -1"},
		{tinySet(3), LoaderConfig{Batch: 4, DropLast: true}, "leaves no batch"},
		{tinySet(3), LoaderConfig{Crop: -2}, "Crop = -2"},
		{tinySet(3), LoaderConfig{Mean: []float32{0, 0}}, "2 Mean values for 1 channels"},
		{tinySet(3), LoaderConfig{Std: []float32{0}}, "channel 0 has Mean 0 and Std 0"},
		{tinySet(3), LoaderConfig{Mean: []float32{float32(math.NaN())}}, "want a finite mean"},
	} {
		_, err := NewLoader(c.set, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewLoader(%+v) error = %v, want one saying %q", c.cfg, err, c.want)
		}
	}
}

func TestLoaderBatchDefault(t *testing.T) {
	l, err := NewLoader(tinySet(3), LoaderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	x, y, ok := l.Next()
	if !ok || len(x) != 2 || len(y) != 1 || l.Batches() != 3 {
		t.Errorf("zero config: first batch %v %v %v, %d batches; want one image, 3 batches", x, y, ok, l.Batches())
	}
}

// TestLoaderBufferReuse documents that Next returns the same memory each call.
func TestLoaderBufferReuse(t *testing.T) {
	l, _ := NewLoader(tinySet(4), LoaderConfig{Batch: 2})
	x1, _, _ := l.Next()
	first := slices.Clone(x1)
	x2, _, _ := l.Next()
	if &x1[0] != &x2[0] || slices.Equal(x1, first) {
		t.Errorf("Next did not reuse its buffer: the first batch %v is now %v", first, x1)
	}
}

func BenchmarkLoaderCIFARShape(b *testing.B) {
	set := SyntheticImages(1024, 3, 32, 32, 10, 1)
	for _, aug := range []bool{false, true} {
		b.Run(fmt.Sprintf("augment=%v", aug), func(b *testing.B) {
			l, _ := NewLoader(set, LoaderConfig{Batch: 128, Shuffle: true, Crop: map[bool]int{true: 4}[aug], Flip: aug,
				Mean: []float32{0.4914, 0.4822, 0.4465}, Std: []float32{0.2470, 0.2435, 0.2616}})
			b.SetBytes(128 * 3 * 32 * 32)
			for b.Loop() {
				if _, _, ok := l.Next(); !ok {
					l.Next()
				}
			}
		})
	}
}

func TestLoaderStateJSON(t *testing.T) {
	l, _ := NewLoader(tinySet(5), LoaderConfig{Batch: 2, Shuffle: true, Flip: true})
	l.Next()
	b, err := json.Marshal(l.State())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("state JSON: %s", b)
	var s LoaderState
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Order, l.State().Order) || s.Pos != 2 || s.Epoch != 0 || s.N != 5 {
		t.Errorf("state after JSON round trip = %+v, want %+v", s, l.State())
	}
}
