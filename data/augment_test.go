package data

import (
	"fmt"
	"slices"
	"testing"
)

// rawTable maps each pixel value to itself, so augment's output reads as
// raw pixels.
func rawTable(c int) []float32 {
	t := make([]float32, c*256)
	for i := range t {
		t[i] = float32(i % 256)
	}
	return t
}

// TestAugmentByHand checks crops and flips of the 3×3 image 1…9 padded by
// one zero pixel, worked out on paper from the padded 5×5 image
//
//	0 0 0 0 0
//	0 1 2 3 0
//	0 4 5 6 0
//	0 7 8 9 0
//	0 0 0 0 0
func TestAugmentByHand(t *testing.T) {
	src := []uint8{1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, c := range []struct {
		dy, dx int
		flip   bool
		want   []float32
	}{
		{1, 1, false, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}}, // centred: the image itself
		{1, 1, true, []float32{3, 2, 1, 6, 5, 4, 9, 8, 7}},
		{0, 0, false, []float32{0, 0, 0, 0, 1, 2, 0, 4, 5}},
		{0, 2, false, []float32{0, 0, 0, 2, 3, 0, 5, 6, 0}},
		{2, 1, false, []float32{4, 5, 6, 7, 8, 9, 0, 0, 0}},
		{2, 1, true, []float32{6, 5, 4, 9, 8, 7, 0, 0, 0}},
		{2, 0, true, []float32{5, 4, 0, 8, 7, 0, 0, 0, 0}},
	} {
		got := make([]float32, 9)
		augment(got, src, rawTable(1), 1, 3, 3, 1, c.dy, c.dx, c.flip)
		if !slices.Equal(got, c.want) {
			t.Errorf("crop (%d,%d) flip %v = %v, want %v", c.dy, c.dx, c.flip, got, c.want)
		}
	}
}

// reference builds the padded image explicitly and cuts the window out.
func reference(src []uint8, c, h, w, pad, dy, dx int, flip bool) []uint8 {
	ph, pw := h+2*pad, w+2*pad
	padded := make([]uint8, c*ph*pw)
	for ch := range c {
		for y := range h {
			copy(padded[(ch*ph+y+pad)*pw+pad:], src[(ch*h+y)*w:(ch*h+y+1)*w])
		}
	}
	out := make([]uint8, 0, c*h*w)
	for ch := range c {
		for y := range h {
			row := padded[(ch*ph+y+dy)*pw+dx : (ch*ph+y+dy)*pw+dx+w]
			row = slices.Clone(row)
			if flip {
				slices.Reverse(row)
			}
			out = append(out, row...)
		}
	}
	return out
}

// TestLoaderCropFlip runs the loader on one two-channel 3×3 image and
// checks that each output is one of the 2·3·3 crops-and-flips (same window
// and flip in both channels) and that all 18 come about equally often.
func TestLoaderCropFlip(t *testing.T) {
	m := &Images{N: 1, C: 2, H: 3, W: 3, Classes: 1, Labels: []uint8{0},
		Pixels: []uint8{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19}}
	candidates := map[string]string{}
	for dy := range 3 {
		for dx := range 3 {
			for _, flip := range []bool{false, true} {
				candidates[fmt.Sprint(reference(m.Pixels, 2, 3, 3, 1, dy, dx, flip))] = fmt.Sprintf("(%d,%d,%v)", dy, dx, flip)
			}
		}
	}
	if len(candidates) != 18 {
		t.Fatalf("%d distinct candidates, want 18", len(candidates))
	}
	l, err := NewLoader(m, LoaderConfig{Crop: 1, Flip: true, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	const draws = 3600
	counts := map[string]int{}
	for range draws {
		x, _, ok := l.Next()
		if !ok {
			x, _, _ = l.Next()
		}
		raw := make([]uint8, len(x))
		for i, v := range x {
			raw[i] = uint8(v*255 + 0.5)
		}
		key := fmt.Sprint(raw)
		name, found := candidates[key]
		if !found {
			t.Fatalf("output %v is no crop-and-flip of the image", raw)
		}
		counts[name]++
	}
	t.Logf("crop/flip counts over %d draws: %v", draws, counts)
	for _, name := range candidates {
		if c := counts[name]; c < 140 || c > 260 { // expected 200, sd ≈ 14
			t.Errorf("%s drawn %d times in %d, want about 200", name, c, draws)
		}
	}
}

// TestLoaderPadValue checks that padding is a raw 0 pixel, normalised.
func TestLoaderPadValue(t *testing.T) {
	m := &Images{N: 1, C: 1, H: 1, W: 1, Pixels: []uint8{255}, Labels: []uint8{0}, Classes: 1}
	l, _ := NewLoader(m, LoaderConfig{Crop: 1, Mean: []float32{0.5}, Std: []float32{0.5}, Seed: 1})
	seen := map[float32]int{}
	for range 90 {
		x, _, ok := l.Next()
		if !ok {
			x, _, _ = l.Next()
		}
		seen[x[0]]++
	}
	// The window is the pixel itself (1 of 9 offsets) or padding.
	if len(seen) != 2 || seen[1] == 0 || seen[-1] == 0 {
		t.Errorf("1×1 image with Crop 1 gave values %v, want only 1 (the pixel) and −1 (padding)", seen)
	}
}
