package cpu_test

import (
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestCopyLargeStrided: large same-dtype copies (a head split [b, t, h, d]
// → [b, h, t, d], a broadcast row, a transposed F32 matrix) put every
// element where index arithmetic on the strides says.
func TestCopyLargeStrided(t *testing.T) {
	d := cpu.New(0, device.Options{})
	k := d.Kernels()
	const b, tt, h, e = 4, 130, 8, 33 // 137280 elements
	cases := []struct {
		name    string
		dt      dtype.DType
		shape   []int
		strides []int // of src, over dst's shape
		srcLen  int
	}{
		{"bf16 head split", dtype.BF16, []int{b, h, tt, e}, []int{tt * h * e, e, h * e, 1}, b * tt * h * e},
		{"i8 broadcast row", dtype.I8, []int{b * tt * h, e}, []int{0, 1}, e},
		{"f32 transpose", dtype.F32, []int{h * e, b * tt}, []int{1, h * e}, b * tt * h * e},
	}
	for _, c := range cases {
		sz := c.dt.Size()
		n := 1
		for _, s := range c.shape {
			n *= s
		}
		sb := d.MustAlloc(int64((c.srcLen+3)*sz), device.Label{Tag: device.Activation})
		db := d.MustAlloc(int64((n+5)*sz), device.Label{Tag: device.Activation})
		raw := sb.Bytes()
		for i := range raw {
			raw[i] = byte(i*7 + i/251)
		}
		src := device.Operand{Block: sb, DType: c.dt, Off: 3, Shape: c.shape, Strides: c.strides}
		dst := device.Operand{Block: db, DType: c.dt, Off: 5, Shape: c.shape}
		k.Copy(dst, src)
		out := db.Bytes()
		idx := make([]int, len(c.shape))
		for i := range n {
			at := src.Off
			for j := range idx {
				at += idx[j] * c.strides[j]
			}
			for q := range sz {
				if got, want := out[(dst.Off+i)*sz+q], raw[at*sz+q]; got != want {
					t.Fatalf("%s: element %d (index %v) byte %d = %#x, want %#x", c.name, i, idx, q, got, want)
				}
			}
			for j := len(idx) - 1; j >= 0; j-- {
				if idx[j]++; idx[j] < c.shape[j] {
					break
				}
				idx[j] = 0
			}
		}
	}
}
