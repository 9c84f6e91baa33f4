package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// TestCopy: every dtype into every dtype (specials: NaN, ±Inf, −0,
// overflow, subnormals, saturating integers), over every layout case, the
// whole destination block byte for byte as the cpu device writes it.
func TestCopy(t *testing.T) {
	p := devices(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, lc := range layoutCases {
		for _, dd := range allDTypes() {
			for _, sd := range allDTypes() {
				name := fmt.Sprintf("%s/%s<-%s", lc.name, dd, sd)
				src := p.put(t, lc.src(sd), values(r, sd, lc.srcN, true))
				dst := p.put(t, lc.dst(dd), values(r, dd, lc.dstN, false))
				p.cpu.Kernels().Copy(dst.cpu, src.cpu)
				p.gpu.Kernels().Copy(dst.gpu, src.gpu)
				c, g := p.read(dst)
				exact(t, name, dd, c, g)
			}
		}
	}
}

// TestFill: a strided fill of every dtype with values that round,
// overflow and saturate.
func TestFill(t *testing.T) {
	p := devices(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, lc := range layoutCases {
		for _, dt := range allDTypes() {
			for _, v := range []float64{-2.75, 1e9, 65519.9, 1.0000001, -300.5} {
				dst := p.put(t, lc.dst(dt), values(r, dt, lc.dstN, false))
				p.cpu.Kernels().Fill(dst.cpu, v)
				p.gpu.Kernels().Fill(dst.gpu, v)
				c, g := p.read(dst)
				exact(t, fmt.Sprintf("%s/%s/%g", lc.name, dt, v), dt, c, g)
			}
		}
	}
}

// unaryExact are the ops both devices compute with the same IEEE
// operations (the rest call math functions whose last bit may differ).
var unaryExact = map[device.UnaryOp]bool{device.Neg: true, device.Abs: true, device.Relu: true,
	device.Scale: true, device.AddScalar: true, device.Sqrt: true}

// TestUnary: every op and float dtype over every layout case (in place
// too); Log, Sqrt, Rsqrt and Pow get positive inputs.
func TestUnary(t *testing.T) {
	p := devices(t)
	r := rand.New(rand.NewPCG(5, 6))
	for op := device.UnaryOp(0); op < device.NumUnaryOps; op++ {
		for _, dt := range floatDTypes() {
			for _, lc := range layoutCases {
				name := fmt.Sprintf("%s/%s/%s", op, dt, lc.name)
				raw := values(r, dt, lc.srcN, false)
				if op == device.Log || op == device.Sqrt || op == device.Rsqrt || op == device.Pow {
					raw = positive(r, dt, lc.srcN)
				}
				src := p.put(t, lc.src(dt), raw)
				dst := p.put(t, lc.dst(dt), values(r, dt, lc.dstN, false))
				p.cpu.Kernels().Unary(op, dst.cpu, src.cpu, 1.7)
				p.gpu.Kernels().Unary(op, dst.gpu, src.gpu, 1.7)
				c, g := p.read(dst)
				if unaryExact[op] {
					exact(t, name, dt, c, g)
				} else {
					near(t, name, dt, c, g, tolerance(dt))
				}
			}
			inPlace(t, p, r, op, dt)
		}
		if !unaryExact[op] {
			continue
		}
		for _, dt := range []dtype.DType{dtype.I8, dtype.I32, dtype.I64} {
			// Integers are computed in float, as the cpu device does.
			lc := layoutCases[2]
			src := p.put(t, lc.src(dt), values(r, dt, lc.srcN, true))
			dst := p.put(t, lc.dst(dt), nil)
			p.cpu.Kernels().Unary(op, dst.cpu, src.cpu, -2.5)
			p.gpu.Kernels().Unary(op, dst.gpu, src.gpu, -2.5)
			c, g := p.read(dst)
			exact(t, fmt.Sprintf("%s/%s", op, dt), dt, c, g)
		}
	}
}

// inPlace checks Unary with dst = src.
func inPlace(t *testing.T, p pair, r *rand.Rand, op device.UnaryOp, dt dtype.DType) {
	t.Helper()
	x := p.put(t, dense(dt, 37), positive(r, dt, 37))
	p.cpu.Kernels().Unary(op, x.cpu, x.cpu, 0.5)
	p.gpu.Kernels().Unary(op, x.gpu, x.gpu, 0.5)
	c, g := p.read(x)
	near(t, fmt.Sprintf("%s/%s/in-place", op, dt), dt, c, g, tolerance(dt))
}

// TestUnaryGrad: every op's gradient from the forward x and y the cpu
// device computed, for every float dtype.
func TestUnaryGrad(t *testing.T) {
	p := devices(t)
	r := rand.New(rand.NewPCG(7, 8))
	const n = 300
	for op := device.UnaryOp(0); op < device.NumUnaryOps; op++ {
		for _, dt := range floatDTypes() {
			raw := values(r, dt, n, false)
			if op == device.Log || op == device.Sqrt || op == device.Rsqrt || op == device.Pow {
				raw = positive(r, dt, n)
			}
			x := p.put(t, dense(dt, n), raw)
			y := p.put(t, dense(dt, n), nil)
			p.cpu.Kernels().Unary(op, y.cpu, x.cpu, 1.7)
			yc, _ := p.read(y)
			y = p.put(t, dense(dt, n), yc)
			dy := p.put(t, dense(dt, n), values(r, dt, n, false))
			dx := p.put(t, dense(dt, n), nil)
			p.cpu.Kernels().UnaryGrad(op, dx.cpu, dy.cpu, x.cpu, y.cpu, 1.7)
			p.gpu.Kernels().UnaryGrad(op, dx.gpu, dy.gpu, x.gpu, y.gpu, 1.7)
			c, g := p.read(dx)
			near(t, fmt.Sprintf("%s/%s", op, dt), dt, c, g, tolerance(dt))
		}
	}
}

// TestBinary: every op and dtype with broadcast and strided operands,
// exactly (IEEE arithmetic and comparisons; NaN rules of Maximum and
// Minimum).
func TestBinary(t *testing.T) {
	p := devices(t)
	r := rand.New(rand.NewPCG(9, 10))
	cases := []struct {
		name    string
		shape   []int
		a, b, d opnd
	}{
		{"dense", []int{4, 6}, opnd{n: 24}, opnd{n: 24}, opnd{n: 24}},
		{"bias", []int{2, 3, 5}, opnd{n: 30}, opnd{n: 3, strides: []int{0, 1, 0}}, opnd{n: 30}},
		{"outer", []int{4, 5}, opnd{n: 4, strides: []int{1, 0}}, opnd{n: 6, off: 1, strides: []int{0, 1}}, opnd{n: 20}},
		{"strided", []int{3, 4}, opnd{n: 12, strides: []int{1, 3}}, opnd{n: 30, off: 3, strides: []int{9, 2}}, opnd{n: 40, off: 1, strides: []int{12, 3}}},
	}
	for op := device.BinaryOp(0); op < device.NumBinaryOps; op++ {
		for _, dt := range allDTypes() {
			for _, bc := range cases {
				mk := func(o opnd, specials bool) twin {
					o.dt, o.shape = dt, bc.shape
					raw := values(r, dt, o.n, specials)
					// Repeat some values so that Eq, Le, Ge and the ties of Maximum see equal operands.
					copy(raw[len(raw)/2:], raw[:len(raw)/4])
					return p.put(t, o, raw)
				}
				a, b, d := mk(bc.a, true), mk(bc.b, true), mk(bc.d, false)
				p.cpu.Kernels().Binary(op, d.cpu, a.cpu, b.cpu)
				p.gpu.Kernels().Binary(op, d.gpu, a.gpu, b.gpu)
				c, g := p.read(d)
				exact(t, fmt.Sprintf("%s/%s/%s", op, dt, bc.name), dt, c, g)
			}
		}
	}
}

// TestAxpy: y += alpha·x for a strided x, every float dtype.
func TestAxpy(t *testing.T) {
	p := devices(t)
	r := rand.New(rand.NewPCG(11, 12))
	for _, dt := range floatDTypes() {
		for _, lc := range layoutCases {
			x := p.put(t, lc.src(dt), values(r, dt, lc.srcN, false))
			y := p.put(t, dense(dt, lc.shape...), values(r, dt, len1(lc.shape), false))
			p.cpu.Kernels().Axpy(-0.37, x.cpu, y.cpu)
			p.gpu.Kernels().Axpy(-0.37, x.gpu, y.gpu)
			c, g := p.read(y)
			// The cpu's float32 loop may or may not fuse the multiply-add.
			near(t, fmt.Sprintf("%s/%s", dt, lc.name), dt, c, g, tolerance(dt))
		}
	}
}

// TestWhere: a condition of every dtype (NaN counts as true) choosing
// between broadcast operands of every dtype.
func TestWhere(t *testing.T) {
	p := devices(t)
	r := rand.New(rand.NewPCG(13, 14))
	shape := []int{3, 4}
	for _, dt := range allDTypes() {
		for _, ct := range allDTypes() {
			craw := values(r, ct, 12, true)
			for i := 0; i < 12; i += 3 {
				copy(craw[i*ct.Size():(i+1)*ct.Size()], make([]byte, ct.Size())) // zeros
			}
			cond := p.put(t, opnd{dt: ct, n: 12, shape: shape, strides: []int{1, 3}}, craw)
			a := p.put(t, opnd{dt: dt, n: 4, shape: shape, strides: []int{0, 1}}, values(r, dt, 4, true))
			b := p.put(t, opnd{dt: dt, n: 12, shape: shape}, values(r, dt, 12, true))
			d := p.put(t, opnd{dt: dt, n: 12, shape: shape}, nil)
			p.cpu.Kernels().Where(d.cpu, cond.cpu, a.cpu, b.cpu)
			p.gpu.Kernels().Where(d.gpu, cond.gpu, a.gpu, b.gpu)
			c, g := p.read(d)
			exact(t, fmt.Sprintf("%s/cond %s", dt, ct), dt, c, g)
		}
	}
}

func len1(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}
