package quant_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/quant"
)

// randF32 returns n values drawn from N(0, std²), some of them scaled up
// to make the ranges uneven.
func randF32(rng *rand.Rand, n int, std float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * std)
		if rng.IntN(50) == 0 {
			v[i] *= 4
		}
	}
	return v
}

// absMax returns max |v| in float64.
func absMax(v []float32) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, math.Abs(float64(x)))
	}
	return m
}

// dotBound returns the bound of the quantized dot product's error derived
// in the package doc: (Δw/2)·Σ|x| + (Δx/2)·Σ|w| + n·Δx·Δw/4, plus a float32
// allowance of 2^−20 of Σ|x·w| + |b| for the reference's and the
// epilogue's roundings.
func dotBound(x, w []float64, b, dx, dw float64) float64 {
	var sx, sw, sxw float64
	for i := range x {
		sx += math.Abs(x[i])
		sw += math.Abs(w[i])
		sxw += math.Abs(x[i] * w[i])
	}
	return dw/2*sx + dx/2*sw + float64(len(x))*dx*dw/4 + (sxw+math.Abs(b))*0x1p-20
}

// TestLinearWithinBound compares the int8 Linear, with dynamic and static
// input scales, against the F32 layer on random inputs, output by output,
// within the bound on the dot product's error; and checks that the error
// is not trivially 0 (the computation really is quantized).
func TestLinearWithinBound(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	rng := rand.New(rand.NewPCG(11, 1))
	for trial, c := range []struct{ m, in, out int }{{5, 37, 19}, {64, 128, 10}, {1, 1, 1}, {33, 300, 70}} {
		b := nn.NewBuilder(dev, dtype.F32, uint64(trial))
		l := nn.NewLinear(b, "fc", c.in, c.out, trial != 2)
		xv := randF32(rng, c.m*c.in, 1)
		static := float32(0)
		if trial%2 == 1 {
			static = float32(absMax(xv) * 0.8 / 127) // some inputs clip: left out of the bound check
		}
		q, err := quant.FromLinear(l, static)
		if err != nil {
			t.Fatal(err)
		}
		s := autograd.NewScope()
		var got, want []float32
		s.NoGrad(func() {
			x := s.FromFloat32s(dev, []int{c.m, c.in}, xv)
			got = q.Forward(x).Float32s()
			want = l.Forward(x).Float32s()
		})
		s.Release()
		wv := l.Weight.Float32s()
		var bv []float32
		if l.Bias != nil {
			bv = l.Bias.Float32s()
		}
		dx := float64(static)
		if dx == 0 {
			dx = absMax(xv) / 127
		}
		worst, checked := 0.0, 0
		for i := range c.m {
			row := xv[i*c.in : (i+1)*c.in]
			if static > 0 && absMax(row) > 127*dx {
				continue
			}
			x64 := toF64(row)
			for j := range c.out {
				w64 := toF64(wv[j*c.in : (j+1)*c.in])
				bj := 0.0
				if bv != nil {
					bj = float64(bv[j])
				}
				bound := dotBound(x64, w64, bj, dx, absMax(wv[j*c.in:(j+1)*c.in])/127)
				e := math.Abs(float64(got[i*c.out+j]) - float64(want[i*c.out+j]))
				if e > bound {
					t.Fatalf("case %+v: y[%d][%d] = %g, f32 %g: error %g above the bound %g", c, i, j, got[i*c.out+j], want[i*c.out+j], e, bound)
				}
				worst = max(worst, e/bound)
				checked++
			}
		}
		if checked == 0 || (c.in > 1 && worst == 0) {
			t.Fatalf("case %+v: %d outputs checked, worst error/bound %g", c, checked, worst)
		}
		t.Logf("linear %+v static %v: %d outputs, worst error at %.1f%% of the bound", c, static > 0, checked, 100*worst)
		nn.Release(l)
		nn.Release(q)
	}
}

// TestConv2dWithinBound compares the int8 Conv2d (batch-norm folded, ReLU
// fused, dynamic and static scales, strides, padding, groups) with the F32
// layers on random inputs, output by output, within the dot-product bound
// over each output's window (the folded weights' own scales).
func TestConv2dWithinBound(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	rng := rand.New(rand.NewPCG(12, 1))
	cases := []struct {
		n, c, h, w, k, r int
		opt              autograd.ConvOptions
		bn, relu, static bool
	}{
		{2, 3, 9, 8, 5, 3, autograd.ConvOptions{Padding: [2]int{1, 1}}, true, true, false},
		{3, 4, 7, 7, 6, 3, autograd.ConvOptions{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, Groups: 2}, false, false, true},
		{1, 8, 5, 6, 16, 1, autograd.ConvOptions{}, true, false, true},
		{4, 2, 6, 5, 3, 2, autograd.ConvOptions{Dilation: [2]int{2, 1}}, false, true, false},
	}
	for ci, c := range cases {
		b := nn.NewBuilder(dev, dtype.F32, uint64(ci))
		conv := nn.NewConv2d(b, "conv", c.c, c.k, [2]int{c.r, c.r}, c.opt, !c.bn)
		var bn *nn.BatchNorm2d
		if c.bn {
			bn = nn.NewBatchNorm2d(b, "bn", c.k, nn.BatchNormOptions{})
			bn.Weight.SetFloat32s(randF32(rng, c.k, 1))
			bn.Bias.SetFloat32s(randF32(rng, c.k, 0.5))
			bn.RunningMean.SetFloat32s(randF32(rng, c.k, 0.3))
			v := randF32(rng, c.k, 1)
			for i := range v {
				v[i] = v[i]*v[i] + 0.2
			}
			bn.RunningVar.SetFloat32s(v)
			bn.Train(false)
		}
		xv := randF32(rng, c.n*c.c*c.h*c.w, 1)
		static := float32(0)
		if c.static {
			static = float32(absMax(xv) / 127)
		}
		q, err := quant.FromConv2d(conv, bn, c.relu, static)
		if err != nil {
			t.Fatal(err)
		}
		// The folded weight and bias, in float64, for the bound.
		wv, kk := toF64(conv.Weight.Float32s()), c.c/max(c.opt.Groups, 1)*c.r*c.r
		bias := make([]float64, c.k)
		if conv.Bias != nil {
			bias = toF64(conv.Bias.Float32s())
		}
		if bn != nil {
			g, be, mu, va := bn.Weight.Float64s(), bn.Bias.Float64s(), bn.RunningMean.Float64s(), bn.RunningVar.Float64s()
			for k := range c.k {
				f := g[k] / math.Sqrt(va[k]+bn.Eps)
				for i := range kk {
					wv[k*kk+i] *= f
				}
				bias[k] = be[k] + (bias[k]-mu[k])*f
			}
		}
		s := autograd.NewScope()
		var got, want []float32
		var oshape []int
		s.NoGrad(func() {
			x := s.FromFloat32s(dev, []int{c.n, c.c, c.h, c.w}, xv)
			y := q.Forward(x)
			oshape = y.Shape()
			got = y.Float32s()
			r := conv.Forward(x)
			if bn != nil {
				r = bn.Forward(r)
			}
			if c.relu {
				r = r.ReLU()
			}
			want = r.Float32s()
		})
		s.Release()
		dx := absMax(xv) / 127
		oh, ow := oshape[2], oshape[3]
		g := max(c.opt.Groups, 1)
		stride, pad, dil := max(c.opt.Stride[0], 1), c.opt.Padding[0], max(c.opt.Dilation[0], 1)
		worst := 0.0
		for n := range c.n {
			for k := range c.k {
				wk := wv[k*kk : (k+1)*kk]
				dw := 0.0
				for _, v := range wk {
					dw = max(dw, math.Abs(v))
				}
				dw /= 127
				for y := range oh {
					for x := range ow {
						win := window(xv, c.c, c.h, c.w, n, k/(c.k/g)*(c.c/g), c.c/g, c.r, y*stride-pad, x*stride-pad, dil, dil)
						bound := dotBound(win, wk, bias[k], dx, dw)
						i := ((n*c.k+k)*oh+y)*ow + x
						e := math.Abs(float64(got[i]) - float64(want[i]))
						if e > bound {
							t.Fatalf("case %d: y[%d][%d][%d][%d] = %g, f32 %g: error %g above the bound %g", ci, n, k, y, x, got[i], want[i], e, bound)
						}
						worst = max(worst, e/bound)
					}
				}
			}
		}
		if worst == 0 {
			t.Fatalf("case %d: no quantization error at all", ci)
		}
		t.Logf("conv case %d: %d outputs, worst error at %.1f%% of the bound", ci, len(got), 100*worst)
		nn.Release(q)
	}
}

// window returns the input values under one output's window (zeros in the
// padding), in weight order (c, r, s).
func window(x []float32, C, H, W, n, c0, cg, r, h0, w0, dh, dw int) []float64 {
	out := make([]float64, 0, cg*r*r)
	for c := range cg {
		for i := range r {
			for j := range r {
				h, w := h0+i*dh, w0+j*dw
				v := 0.0
				if h >= 0 && h < H && w >= 0 && w < W {
					v = float64(x[((n*C+c0+c)*H+h)*W+w])
				}
				out = append(out, v)
			}
		}
	}
	return out
}

func toF64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// release drops the handles among ts other than keep.
func release(keep *autograd.Tensor, ts ...*autograd.Tensor) {
	for _, t := range ts {
		if t != nil && t != keep {
			t.Release()
		}
	}
}

// TestRoundTripPerChannel quantizes random convolution weights per output
// channel through the device (Scales, then FakeQuantize: quantize and
// dequantize) and checks every element: within half a step of its
// channel's scale (plus the float32 rounding of x·(1/s), 2^−16 of a step),
// the scale max|row|/127 (at least 2^−23: rows of zeros or tiny values
// quantize to 0), and each row's largest magnitude reproduced.
func TestRoundTripPerChannel(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	rng := rand.New(rand.NewPCG(31, 1))
	const k, per = 24, 5 * 3 * 3
	w := randF32(rng, k*per, 0.1)
	for i := range per { // one row of zeros, one of tiny values
		w[3*per+i] = 0
		w[7*per+i] *= 1e-30
	}
	s := autograd.NewScope()
	defer s.Release()
	var sc, fq []float32
	s.NoGrad(func() {
		x := s.FromFloat32s(dev, []int{k, 5, 3, 3}, w)
		scale := quant.Scales(x, k)
		sc, fq = scale.Float32s(), quant.FakeQuantize(x, scale, k).Float32s()
	})
	for r := range k {
		row := w[r*per : (r+1)*per]
		m := absMax(row)
		if want := max(float32(m)/127, 0x1p-23); sc[r] != want {
			t.Fatalf("row %d: scale %g, want max|row|/127 = %g", r, sc[r], want)
		}
		step := float64(sc[r])
		for i, v := range row {
			e := math.Abs(float64(fq[r*per+i]) - float64(v))
			if e > step*(0.5+1.0/65536) {
				t.Fatalf("row %d element %d: %g round-trips to %g, error %g > half a step %g", r, i, v, fq[r*per+i], e, step/2)
			}
			if math.Abs(float64(v)) == m && m/127 > 0x1p-23 && e > 1e-6*m {
				t.Fatalf("row %d: the largest magnitude %g round-trips to %g", r, v, fq[r*per+i])
			}
		}
	}
	t.Logf("%d channels of %d weights: every element within half a step", k, per)
}
