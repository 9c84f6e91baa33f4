package data

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// Images is a labelled image set held in host memory.
type Images struct {
	N, C, H, W int     // images, channels, height, width
	Pixels     []uint8 // (N, C, H, W): image i, channel c, row y, column x at ((i·C+c)·H+y)·W+x
	Labels     []uint8 // (N): class of each image, in [0, Classes)
	Classes    int     // number of classes
}

// Validate reports whether the set is consistent: positive sizes, N·C·H·W
// pixels, N labels, every label below Classes.
func (m *Images) Validate() error {
	if m == nil {
		return fmt.Errorf("data.Images: nil set")
	}
	if m.N <= 0 || m.C <= 0 || m.H <= 0 || m.W <= 0 {
		return fmt.Errorf("data.Images: sizes N=%d C=%d H=%d W=%d must all be positive", m.N, m.C, m.H, m.W)
	}
	if want := m.N * m.C * m.H * m.W; len(m.Pixels) != want {
		return fmt.Errorf("data.Images: %d pixels, want N·C·H·W = %d·%d·%d·%d = %d", len(m.Pixels), m.N, m.C, m.H, m.W, want)
	}
	if len(m.Labels) != m.N {
		return fmt.Errorf("data.Images: %d labels, want N = %d", len(m.Labels), m.N)
	}
	if m.Classes <= 0 || m.Classes > 256 {
		return fmt.Errorf("data.Images: Classes = %d, want 1 to 256", m.Classes)
	}
	for i, l := range m.Labels {
		if int(l) >= m.Classes {
			return fmt.Errorf("data.Images: label %d of image %d is not below Classes = %d", l, i, m.Classes)
		}
	}
	return nil
}

// Counts returns how many images each class has.
func (m *Images) Counts() []int {
	c := make([]int, m.Classes)
	for _, l := range m.Labels {
		c[l]++
	}
	return c
}

// SyntheticImages returns n seeded random images of c×h×w pixels in the
// given number of classes, with the structure of a real task but no files:
// each class has a prototype image of uniform random pixels, and each image
// is its class's prototype plus independent noise uniform in [−32, 31] on
// every pixel (clamped to 0–255). Labels are uniform over the classes. The
// same arguments give the same set. It panics if a size is not positive or
// classes is above 256.
func SyntheticImages(n, c, h, w, classes int, seed uint64) *Images {
	if n <= 0 || c <= 0 || h <= 0 || w <= 0 || classes <= 0 || classes > 256 {
		panic(fmt.Sprintf("data.SyntheticImages(n=%d, c=%d, h=%d, w=%d, classes=%d): sizes must be positive and classes at most 256", n, c, h, w, classes))
	}
	src := rand.NewPCG(seed, streamSyntheticImages)
	d := c * h * w
	protos := make([]uint8, classes*d)
	fillBytes(src, protos)
	m := &Images{N: n, C: c, H: h, W: w, Pixels: make([]uint8, n*d), Labels: make([]uint8, n), Classes: classes}
	for i := range n {
		l := int(below(src, uint64(classes)))
		m.Labels[i] = uint8(l)
		proto := protos[l*d : (l+1)*d]
		out := m.Pixels[i*d : (i+1)*d]
		var word uint64
		for j := range d {
			if j%8 == 0 {
				word = src.Uint64()
			}
			v := int(proto[j]) + int(uint8(word)>>2) - 32 // noise in [−32, 31]
			word >>= 8
			out[j] = uint8(min(max(v, 0), 255))
		}
	}
	return m
}

// Streams of the PCG generators (the second seed word): one per use, so that
// no two uses of a seed share a sequence.
const (
	streamSyntheticImages = 0x1d5e_a6e5_0000_0001
	streamSyntheticTokens = 0x1d5e_a6e5_0000_0002
	streamLoaderOrder     = 0x1d5e_a6e5_0000_0003
	streamLoaderAugment   = 0x1d5e_a6e5_0000_0004
)

// below returns a uniform integer in [0, n) from src (n > 0), by Lemire's
// multiply-and-reject method. It is written here rather than taken from
// rand.Rand so that a seed's sequences never change with the Go release.
func below(src *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// fillBytes fills b with uniform random bytes from src.
func fillBytes(src *rand.PCG, b []uint8) {
	var word uint64
	for j := range b {
		if j%8 == 0 {
			word = src.Uint64()
		}
		b[j] = uint8(word)
		word >>= 8
	}
}
