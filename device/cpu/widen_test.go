package cpu_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// viewCase is a (rows, cols) LayerNorm followed by a bias Add, on views of
// one flat block of dtype dt (as under --amp-params, where every parameter
// is a view of one buffer): x, w, b, y and z sit far apart inside it.
type viewCase struct {
	dt                  dtype.DType
	rows, cols          int
	flat                *device.Block
	mean, rstd          *device.Block
	x, w, b, y, z, bias device.Operand
}

const viewBlockElems = 8 << 20 // 16 MiB of BF16

func newViewCase(t *testing.T, d *device.Device, dt dtype.DType, n, rows, cols int) *viewCase {
	t.Helper()
	flat := d.MustAlloc(int64(n*dt.Size()), device.Label{Tag: device.Parameter})
	stat := func() *device.Block { return d.MustAlloc(int64(rows*4), device.Label{Tag: device.Activation}) }
	c := &viewCase{dt: dt, rows: rows, cols: cols, flat: flat, mean: stat(), rstd: stat()}
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = r.NormFloat64()
	}
	dtype.FromF64(dt, flat.Bytes(), vals)
	at := func(off int, shape []int, strides []int) device.Operand {
		return device.Operand{Block: flat, Off: off, DType: dt, Shape: shape, Strides: strides}
	}
	q := n / 8
	rc := []int{rows, cols}
	c.x, c.w, c.b = at(q+3, rc, nil), at(2*q+5, []int{cols}, nil), at(3*q+7, []int{cols}, nil)
	c.y, c.z = at(4*q+1, rc, nil), at(5*q+9, rc, nil)
	c.bias = at(6*q+11, rc, []int{0, 1}) // one row broadcast over the rows
	return c
}

func (c *viewCase) run(k device.Kernels) {
	f32 := func(b *device.Block) device.Operand {
		return device.Operand{Block: b, DType: dtype.F32, Shape: []int{c.rows}}
	}
	k.LayerNorm(c.y, f32(c.mean), f32(c.rstd), c.x, c.w, c.b, c.rows, c.cols, 1e-5)
	k.Binary(device.Add, c.z, c.y, c.bias)
}

// normElems is the number of block elements LayerNorm widens whole: w and
// b (x, y and the Add are tiled).
func (c *viewCase) normElems() int {
	return 2 * c.cols
}

// heapPerRun returns the Go heap bytes one run allocates, over reps runs
// after a warm-up.
func heapPerRun(reps int, f func()) float64 {
	f()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range reps {
		f()
	}
	runtime.ReadMemStats(&m1)
	return float64(m1.TotalAlloc-m0.TotalAlloc) / float64(reps)
}

// TestViewsWidenOnlyTheirElements: a (4,64) LayerNorm + Add on BF16 views
// of a 16 MiB block allocate no more Go heap than the same calls on F32
// operands, plus 4 bytes per element of LayerNorm's w and b (their float32
// copy), plus one worker's tile scratch (the tiles' fixed overhead stays
// below it); they leave every other element of the block
// alone, and agree with float64 arithmetic on the BF16 inputs to BF16
// rounding.
func TestViewsWidenOnlyTheirElements(t *testing.T) {
	d := cpu.New(0, device.Options{})
	k := d.Kernels()
	const rows, cols = 4, 64
	half := newViewCase(t, d, dtype.BF16, viewBlockElems, rows, cols)
	f32 := newViewCase(t, d, dtype.F32, 1<<12, rows, cols)
	before := bytes.Clone(half.flat.Bytes())

	base := heapPerRun(10, func() { f32.run(k) })
	got := heapPerRun(10, func() { half.run(k) })
	bound := base + float64(4*half.normElems()+cpu.TileScratchBytes)
	t.Logf("Go heap per LayerNorm+Add: BF16 views %.0f bytes, F32 %.0f, bound %.0f", got, base, bound)
	if got > bound {
		t.Errorf("BF16 views of a %d-element block: %.0f bytes of Go heap per LayerNorm+Add, want ≤ %.0f (F32 run %.0f + 4 bytes × %d elements of w and b + %d bytes of tile scratch)",
			viewBlockElems, got, bound, base, half.normElems(), cpu.TileScratchBytes)
	}
	half.checkValues(t, before)
}

// checkValues compares y and z with float64 arithmetic on the BF16 inputs
// and checks that no byte outside y and z changed.
func (c *viewCase) checkValues(t *testing.T, before []byte) {
	t.Helper()
	now := c.flat.Bytes()
	read := func(b []byte, o device.Operand, i int) float64 {
		v := make([]float64, 1)
		dtype.ToF64(v, c.dt, b[(o.Off+i)*2:(o.Off+i)*2+2])
		return v[0]
	}
	for r := range c.rows {
		var mu, ss float64
		for j := range c.cols {
			mu += read(before, c.x, r*c.cols+j)
		}
		mu /= float64(c.cols)
		for j := range c.cols {
			e := read(before, c.x, r*c.cols+j) - mu
			ss += e * e
		}
		rstd := 1 / math.Sqrt(ss/float64(c.cols)+1e-5)
		for j := range c.cols {
			i := r*c.cols + j
			y := (read(before, c.x, i)-mu)*rstd*read(before, c.w, j) + read(before, c.b, j)
			// y as stored (BF16) is within one BF16 ulp (2^-7 relative at
			// most) of the exact value; z adds a BF16 bias to the stored y
			// and rounds once more.
			gy := read(now, c.y, i)
			if math.Abs(gy-y) > 0x1p-7*math.Abs(y)+1e-6 {
				t.Fatalf("LayerNorm y[%d,%d] = %v, float64 reference %v", r, j, gy, y)
			}
			z := gy + read(before, c.bias, j)
			if gz := read(now, c.z, i); math.Abs(gz-z) > 0x1p-8*math.Abs(z)+1e-6 {
				t.Fatalf("Add z[%d,%d] = %v, float64 reference %v", r, j, gz, z)
			}
		}
	}
	for _, o := range []device.Operand{c.y, c.z} {
		copy(before[o.Off*2:(o.Off+o.Len())*2], now[o.Off*2:(o.Off+o.Len())*2])
	}
	if i := firstDiff(before, now); i >= 0 {
		t.Errorf("byte %d of the block outside y and z changed", i)
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// TestTiledHeapIsBounded: a BF16 Add of 2^20 elements (256 tiles), on all
// workers, allocates no more Go heap per call in steady state than the
// same Add in F32 plus one worker's tile scratch: the heap does not grow
// with the operands (widening them whole took 12 MiB), and the result is
// the float64 sum of the BF16 inputs rounded to BF16.
func TestTiledHeapIsBounded(t *testing.T) {
	d := cpu.New(0, device.Options{})
	k := d.Kernels()
	const n = 1 << 20
	ops := func(dt dtype.DType) (z, x, y device.Operand) {
		mk := func(seed uint64) device.Operand {
			b := d.MustAlloc(int64(n*dt.Size()), device.Label{Tag: device.Activation})
			r := rand.New(rand.NewPCG(seed, 9))
			v := make([]float64, n)
			for i := range v {
				v[i] = r.NormFloat64()
			}
			dtype.FromF64(dt, b.Bytes(), v)
			return device.Operand{Block: b, DType: dt, Shape: []int{n / 1024, 1024}}
		}
		return mk(1), mk(2), mk(3)
	}
	z32, x32, y32 := ops(dtype.F32)
	z, x, y := ops(dtype.BF16)
	base := heapPerRun(4, func() { k.Binary(device.Add, z32, x32, y32) })
	got := heapPerRun(4, func() { k.Binary(device.Add, z, x, y) })
	t.Logf("Go heap per Add of %d elements: BF16 %.0f bytes, F32 %.0f", n, got, base)
	if bound := base + cpu.TileScratchBytes; got > bound {
		t.Errorf("BF16 Add of %d elements: %.0f bytes of Go heap per call, want ≤ %.0f (F32 %.0f + %d bytes of tile scratch)",
			n, got, bound, base, cpu.TileScratchBytes)
	}
	xs, ys, zs := make([]float64, n), make([]float64, n), make([]float64, n)
	dtype.ToF64(xs, dtype.BF16, x.Block.Bytes())
	dtype.ToF64(ys, dtype.BF16, y.Block.Bytes())
	dtype.ToF64(zs, dtype.BF16, z.Block.Bytes())
	want := make([]byte, 2*n)
	sum := make([]float64, n)
	for i := range sum {
		sum[i] = xs[i] + ys[i]
	}
	dtype.FromF64(dtype.BF16, want, sum)
	if i := firstDiff(want, z.Block.Bytes()); i >= 0 {
		t.Errorf("BF16 Add element %d = %v, want %v rounded to BF16", i/2, zs[i/2], sum[i/2])
	}
}
