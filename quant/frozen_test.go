package quant_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/quant"
)

// dequantMatmul returns x·Ŵᵀ + b in float64 for x (m, in) and the layer's
// INT8 weight read back as q·s: quant's dequantised matmul, on the host.
func dequantMatmul(l *quant.FrozenLinear, x []float64, m int) []float64 {
	q, s := l.Weight.Float64s(), l.WeightScale.Float64s()
	var b []float64
	if l.Bias != nil {
		b = l.Bias.Float64s()
	}
	y := make([]float64, m*l.Out)
	for i := range m {
		for o := range l.Out {
			var acc float64
			for k := range l.In {
				acc += x[i*l.In+k] * q[o*l.In+k] * s[o]
			}
			if b != nil {
				acc += b[o]
			}
			y[i*l.Out+o] = acc
		}
	}
	return y
}

// TestFrozenLinear checks FrozenLinear's forward against the dequantised
// matmul in float64 and its input gradient against r·Ŵ (the transpose
// product), for one tile and for several tiles with a ragged last one
// (In 20000: 3 rows a tile, Out 7), and that the weight gets no gradient
// and its workspace is gone when Forward returns.
func TestFrozenLinear(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	rng := rand.New(rand.NewPCG(41, 1))
	for _, sz := range []struct{ m, in, out int }{{6, 24, 10}, {4, 20000, 7}} {
		b := nn.NewBuilder(dev, dtype.F32, 3)
		fl := nn.NewLinear(b, "fc", sz.in, sz.out, true)
		b.Uniform(fl.Bias, -0.5, 0.5)
		l, err := quant.Freeze(fl)
		if err != nil {
			t.Fatal(err)
		}
		nn.Release(fl)
		xv := make([]float64, sz.m*sz.in)
		for i := range xv {
			xv[i] = rng.NormFloat64()
		}
		rv := make([]float64, sz.m*sz.out)
		for i := range rv {
			rv[i] = rng.NormFloat64()
		}
		x := autograd.FromFloat64s(dev, []int{2, sz.m / 2, sz.in}, xv).Cast(dtype.F32).SetRequiresGrad(true)
		xf := x.Float64s()
		s := autograd.NewScope()
		before := dev.Stats().ByTag[device.Workspace].Allocated
		y := l.Forward(s.Use(x))
		ws := dev.Stats().ByTag[device.Workspace]
		rows := min(sz.out, quant.FrozenTile/sz.in)
		if ws.Current != 0 || ws.Allocated-before != int64(4*rows*sz.in) {
			t.Errorf("%v: workspace %d bytes borrowed, %d still held after Forward; want 4·%d·%d borrowed, 0 held", sz, ws.Allocated-before, ws.Current, rows, sz.in)
		}
		want := dequantMatmul(l, xf, sz.m)
		for i, v := range y.Float64s() {
			if math.Abs(v-want[i]) > 1e-5*(1+math.Abs(want[i])) {
				t.Fatalf("%v: y[%d] = %g, dequantised matmul %g", sz, i, v, want[i])
			}
		}
		if err := y.BackwardWith(s.FromFloat64s(dev, []int{2, sz.m / 2, sz.out}, rv).Cast(dtype.F32)); err != nil {
			t.Fatal(err)
		}
		s.Release()
		q, sc := l.Weight.Float64s(), l.WeightScale.Float64s()
		for i, g := range x.Grad().Float64s() {
			r, k := i/sz.in, i%sz.in
			var w float64
			for o := range sz.out {
				w += rv[r*sz.out+o] * q[o*sz.in+k] * sc[o]
			}
			if math.Abs(g-w) > 1e-5*(1+math.Abs(w)) {
				t.Fatalf("%v: dx[%d] = %g, r·Ŵ %g", sz, i, g, w)
			}
		}
		if l.Weight.Grad() != nil || l.WeightScale.Grad() != nil || l.Bias.Grad() != nil {
			t.Errorf("%v: the frozen layer's tensors hold a gradient", sz)
		}
		autogradtest.Release(x)
		nn.Release(l)
	}
}
