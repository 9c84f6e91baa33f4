package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// refPool computes max and average pooling and their gradients for dy by
// visiting every tap of every window, in float64. The max gradient goes to
// the first maximum in row-major tap order.
func refPool(p PoolArgs, x, dy []float64) (ymax, yavg, dxmax, dxavg []float64) {
	no := p.N * p.C * p.OH * p.OW
	ymax, yavg = make([]float64, no), make([]float64, no)
	dxmax, dxavg = make([]float64, len(x)), make([]float64, len(x))
	for nc := range p.N * p.C {
		for oh := range p.OH {
			for ow := range p.OW {
				yi := (nc*p.OH+oh)*p.OW + ow
				best, at, sum, cnt := math.Inf(-1), -1, 0.0, 0
				var taps []int
				for r := range p.KH {
					for s := range p.KW {
						ih, iw := oh*p.SH-p.PH+r*p.DH, ow*p.SW-p.PW+s*p.DW
						if ih < 0 || ih >= p.H || iw < 0 || iw >= p.W {
							continue
						}
						xi := (nc*p.H+ih)*p.W + iw
						taps = append(taps, xi)
						if x[xi] > best {
							best, at = x[xi], xi
						}
						sum += x[xi]
						cnt++
					}
				}
				div := float64(cnt)
				if p.CountPad {
					div = float64(p.KH * p.KW)
				}
				ymax[yi], yavg[yi] = best, sum/div
				if at >= 0 {
					dxmax[at] += dy[yi]
				}
				for _, xi := range taps {
					dxavg[xi] += dy[yi] / div
				}
			}
		}
	}
	return
}

func randPool(rng *rand.Rand) PoolArgs {
	for {
		p := PoolArgs{
			N: 1 + rng.IntN(2), C: 1 + rng.IntN(3), H: 1 + rng.IntN(9), W: 1 + rng.IntN(9),
			KH: 1 + rng.IntN(4), KW: 1 + rng.IntN(4), SH: 1 + rng.IntN(3), SW: 1 + rng.IntN(3),
			DH: 1 + rng.IntN(2), DW: 1 + rng.IntN(2), CountPad: rng.IntN(2) == 0,
		}
		p.PH, p.PW = rng.IntN(p.KH/2+1), rng.IntN(p.KW/2+1)
		nh := p.H + 2*p.PH - p.DH*(p.KH-1) - 1
		nw := p.W + 2*p.PW - p.DW*(p.KW-1) - 1
		if nh < 0 || nw < 0 {
			continue
		}
		p.OH, p.OW = nh/p.SH+1, nw/p.SW+1
		return p
	}
}

func runPool[T Float](t *testing.T, p PoolArgs, x, dy []float64, conv func([]float64) []T, tol float64) {
	t.Helper()
	rmax, ravg, rdmax, rdavg := refPool(p, x, dy)
	no := len(rmax)
	y, dx := nanSlice[T](no), nanSlice[T](len(x))
	MaxPool2d(p, y, conv(x))
	if i := within(y, rmax, tol); i >= 0 {
		t.Errorf("MaxPool2d %+v: y[%d] = %v, want %v", p, i, y[i], rmax[i])
	}
	MaxPool2dGrad(p, dx, conv(dy), conv(x))
	if i := within(dx, rdmax, tol); i >= 0 {
		t.Errorf("MaxPool2dGrad %+v: dx[%d] = %v, want %v", p, i, dx[i], rdmax[i])
	}
	y, dx = nanSlice[T](no), nanSlice[T](len(x))
	AvgPool2d(p, y, conv(x))
	if i := within(y, ravg, tol); i >= 0 {
		t.Errorf("AvgPool2d %+v: y[%d] = %v, want %v", p, i, y[i], ravg[i])
	}
	AvgPool2dGrad(p, dx, conv(dy))
	if i := within(dx, rdavg, tol); i >= 0 {
		t.Errorf("AvgPool2dGrad %+v: dx[%d] = %v, want %v", p, i, dx[i], rdavg[i])
	}
}

func TestPool2dKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 80 {
		if i == 40 { // the rest split across the workers, plane by plane
			defer func(v int) { normParallelMin = v }(normParallelMin)
			normParallelMin = 1
		}
		p := randPool(rng)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			x := randSlice(rng, p.N*p.C*p.H*p.W)
			dy := randSlice(rng, p.N*p.C*p.OH*p.OW)
			runPool(t, p, x, dy, func(v []float64) []float64 { return append([]float64(nil), v...) }, 1e-12)
			runPool(t, p, x, dy, to32, 1e-5)
		})
	}
}

func TestMaxPool2dTiesAndNaN(t *testing.T) {
	p := PoolArgs{N: 1, C: 1, H: 2, W: 3, KH: 2, KW: 2, SH: 1, SW: 1, DH: 1, DW: 1, OH: 1, OW: 2}
	x := []float64{1, 3, 3, 3, 0, math.NaN()}
	y := make([]float64, 2)
	MaxPool2d(p, y, x)
	if y[0] != 3 || !math.IsNaN(y[1]) {
		t.Errorf("MaxPool2d = %v, want [3 NaN]", y)
	}
	dx := make([]float64, 6)
	MaxPool2dGrad(p, dx, []float64{1, 10}, x)
	want := []float64{0, 1, 0, 0, 0, 10} // first maximum of window 0 is x[1]
	for i := range want {
		if dx[i] != want[i] {
			t.Fatalf("MaxPool2dGrad = %v, want %v", dx, want)
		}
	}
}

// refAdaptive computes adaptive average pooling and its gradient with the
// windows written from their definition: start ⌊i·in/out⌋, end ⌈(i+1)·in/out⌉.
func refAdaptive(x, dy []float64, n, c, h, w, oh, ow int) (y, dx []float64) {
	y, dx = make([]float64, n*c*oh*ow), make([]float64, len(x))
	for nc := range n * c {
		for i := range oh {
			h0 := int(math.Floor(float64(i*h) / float64(oh)))
			h1 := int(math.Ceil(float64((i+1)*h) / float64(oh)))
			for j := range ow {
				w0 := int(math.Floor(float64(j*w) / float64(ow)))
				w1 := int(math.Ceil(float64((j+1)*w) / float64(ow)))
				yi := (nc*oh+i)*ow + j
				cnt := float64((h1 - h0) * (w1 - w0))
				for r := h0; r < h1; r++ {
					for s := w0; s < w1; s++ {
						y[yi] += x[(nc*h+r)*w+s] / cnt
						dx[(nc*h+r)*w+s] += dy[yi] / cnt
					}
				}
			}
		}
	}
	return y, dx
}

func TestAdaptiveAvgPool2dKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 60 {
		if i == 30 { // the rest split across the workers, plane by plane
			defer func(v int) { normParallelMin = v }(normParallelMin)
			normParallelMin = 1
		}
		n, c, h, w := 1+rng.IntN(2), 1+rng.IntN(3), 1+rng.IntN(9), 1+rng.IntN(9)
		oh, ow := 1+rng.IntN(h+2), 1+rng.IntN(w+2) // also larger than the input
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			x := randSlice(rng, n*c*h*w)
			dy := randSlice(rng, n*c*oh*ow)
			ry, rdx := refAdaptive(x, dy, n, c, h, w, oh, ow)
			y, dx := nanSlice[float64](len(ry)), nanSlice[float64](len(x))
			AdaptiveAvgPool2d(y, x, n, c, h, w, oh, ow)
			AdaptiveAvgPool2dGrad(dx, dy, n, c, h, w, oh, ow)
			if i := within(y, ry, 1e-12); i >= 0 {
				t.Errorf("AdaptiveAvgPool2d %v→%dx%d: y[%d] = %v, want %v", []int{n, c, h, w}, oh, ow, i, y[i], ry[i])
			}
			if i := within(dx, rdx, 1e-12); i >= 0 {
				t.Errorf("AdaptiveAvgPool2dGrad %v→%dx%d: dx[%d] = %v, want %v", []int{n, c, h, w}, oh, ow, i, dx[i], rdx[i])
			}
			y32, dx32 := nanSlice[float32](len(ry)), nanSlice[float32](len(x))
			AdaptiveAvgPool2d(y32, to32(x), n, c, h, w, oh, ow)
			AdaptiveAvgPool2dGrad(dx32, to32(dy), n, c, h, w, oh, ow)
			if i := within(y32, ry, 1e-5); i >= 0 {
				t.Errorf("AdaptiveAvgPool2d[float32]: y[%d] = %v, want %v", i, y32[i], ry[i])
			}
			if i := within(dx32, rdx, 1e-5); i >= 0 {
				t.Errorf("AdaptiveAvgPool2dGrad[float32]: dx[%d] = %v, want %v", i, dx32[i], rdx[i])
			}
		})
	}
}
