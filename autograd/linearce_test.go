package autograd_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
)

// lceRun runs the loss of x (n, c) through a head w (v, c) with bias (or,
// tied, x the embedding rows idx of w and no bias) forward and backward,
// fused (LinearCrossEntropy) or plain (CrossEntropy of Linear), and
// returns the loss and the leaves' gradients.
func lceRun(t *testing.T, fused, tied bool, n, c, v int, o autograd.LCEOptions, tgt []int64) [][]float64 {
	t.Helper()
	dev := cpu.New(0, device.Options{})
	r := rand.New(rand.NewPCG(3, 4))
	s := autograd.NewScope()
	defer s.Release()
	w := s.FromFloat64s(dev, []int{v, c}, randVals(r, v*c)).SetRequiresGrad(true)
	leaves := []*autograd.Tensor{w}
	var x, b *autograd.Tensor
	if tied {
		idx := make([]int64, n)
		for i := range idx {
			idx[i] = int64(r.IntN(v))
		}
		x = autograd.Embedding(w, s.FromInt64s(dev, []int{n}, idx))
	} else {
		x = s.FromFloat64s(dev, []int{n, c}, randVals(r, n*c)).SetRequiresGrad(true)
		b = s.FromFloat64s(dev, []int{v}, randVals(r, v)).SetRequiresGrad(true)
		leaves = append(leaves, x, b)
	}
	y := s.FromInt64s(dev, []int{n}, tgt)
	var loss *autograd.Tensor
	if fused {
		loss = autograd.LinearCrossEntropy(x, w, b, y, o)
	} else {
		loss = autograd.CrossEntropy(autograd.Linear(x, w, b), y, o.CEOptions)
	}
	out := [][]float64{loss.Float64s()}
	if loss.Rank() > 0 {
		// weight the rows so that every row's gradient differs
		wts := s.FromFloat64s(dev, []int{n}, randVals(r, n))
		loss = loss.Mul(wts).Sum(false)
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	for _, l := range leaves {
		out = append(out, l.Grad().Float64s())
	}
	return out
}

// TestLinearCrossEntropyMatchesPlain checks the fused loss and its
// gradients (dx, dw, db; the tied weight's two contributions) against
// CrossEntropy(Linear(x, w, b)) in F64, for every reduction, with and
// without label smoothing and an ignore index, chunks dividing the rows
// or not.
func TestLinearCrossEntropyMatchesPlain(t *testing.T) {
	const n, c, v = 23, 6, 11
	for _, red := range []string{"mean", "sum", "none"} {
		for _, ign := range []bool{false, true} {
			for _, eps := range []float64{0, 0.15} {
				for _, chunk := range []int{0, 1, 5, 23, 100} {
					for _, tied := range []bool{false, true} {
						o := autograd.LCEOptions{CEOptions: autograd.CEOptions{Reduction: red, Ignore: ign, IgnoreIndex: -100, LabelSmoothing: eps}, Chunk: chunk}
						name := fmt.Sprintf("%s/ignore=%v/eps=%g/chunk=%d/tied=%v", red, ign, eps, chunk, tied)
						tgt := nslTargets(7, n, v, ign, -100)
						got := lceRun(t, true, tied, n, c, v, o, tgt)
						want := lceRun(t, false, tied, n, c, v, o, tgt)
						for i := range want {
							for j := range want[i] {
								if d := math.Abs(got[i][j] - want[i][j]); d > 1e-12*math.Max(1, math.Abs(want[i][j])) {
									t.Fatalf("%s: result %d [%d] = %v fused, %v plain", name, i, j, got[i][j], want[i][j])
								}
							}
						}
					}
				}
			}
		}
	}
}

// lcePeak runs a mean fused loss forward and backward on dev in F64 and
// returns the requested-bytes peak above what was alive before it.
func lcePeak(dev *device.Device, n, c, v, chunk int, bias bool) int64 {
	s := autograd.NewScope()
	defer s.Release()
	x := s.Zeros(dev, dtype.F64, n, c).SetRequiresGrad(true)
	w := s.Zeros(dev, dtype.F64, v, c).SetRequiresGrad(true)
	var b *autograd.Tensor
	if bias {
		b = s.Zeros(dev, dtype.F64, v).SetRequiresGrad(true)
	}
	y := s.Zeros(dev, dtype.I64, n)
	base := dev.Stats().Requested.Current
	dev.ResetPeak()
	loss := autograd.LinearCrossEntropy(x, w, b, y, autograd.LCEOptions{Chunk: chunk})
	if err := loss.Backward(); err != nil {
		panic(err)
	}
	return dev.Stats().Requested.Peak - base
}

// TestLinearCrossEntropyBytes checks the closed form of the loss's peak
// on cpu and meta: chunk·V logits (twice in backward: the logits and their
// gradient), never N·V.
func TestLinearCrossEntropyBytes(t *testing.T) {
	const n, c, v = 50, 4, 30
	for _, chunk := range []int{1, 7, 50} {
		for _, bias := range []bool{false, true} {
			// backward peak: lse (n) + loss (1) + its seed gradient (1) +
			// dloss (n) + dx (n·c) + dw (v·c) + [db + its chunk (2v)] +
			// logits and gradient of one chunk (2·chunk·v), 8 bytes each
			want := int64(8 * (2*n + 2 + n*c + v*c + 2*chunk*v))
			if bias {
				want += 8 * 2 * v
			}
			got := lcePeak(cpu.New(0, device.Options{}), n, c, v, chunk, bias)
			onMeta := lcePeak(meta.New(0, device.Options{}), n, c, v, chunk, bias)
			if got != want || onMeta != want {
				t.Errorf("chunk %d bias %v: peak %d bytes on cpu, %d on meta, want %d", chunk, bias, got, onMeta, want)
			}
		}
	}
}

// TestLinearCrossEntropyRefuses checks bad input fails before any work.
func TestLinearCrossEntropyRefuses(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	x, w := s.Zeros(dev, dtype.F32, 4, 3), s.Zeros(dev, dtype.F32, 5, 3)
	y := s.FromInt64s(dev, []int{4}, []int64{0, 1, 2, 3})
	w2, b4 := s.Zeros(dev, dtype.F32, 5, 2), s.Zeros(dev, dtype.F32, 4)
	y3, y5 := s.FromInt64s(dev, []int{3}, []int64{0, 1, 2}), s.FromInt64s(dev, []int{4}, []int64{0, 5, 1, 1})
	for _, c := range []struct {
		name, want string
		f          func()
	}{
		{"width", "want input (N, C) and weight (V, C)", func() { autograd.LinearCrossEntropy(x, w2, nil, y, autograd.LCEOptions{}) }},
		{"bias", "bias [4] for weight [5 3]", func() { autograd.LinearCrossEntropy(x, w, b4, y, autograd.LCEOptions{}) }},
		{"rows", "want target (4)", func() { autograd.LinearCrossEntropy(x, w, nil, y3, autograd.LCEOptions{}) }},
		{"range", "target 5 of row 1 is outside [0, 5)", func() { autograd.LinearCrossEntropy(x, w, nil, y5, autograd.LCEOptions{}) }},
		{"chunk", "chunk -1", func() { autograd.LinearCrossEntropy(x, w, nil, y, autograd.LCEOptions{Chunk: -1}) }},
		{"reduction", "reduction \"avg\"", func() {
			autograd.LinearCrossEntropy(x, w, nil, y, autograd.LCEOptions{CEOptions: autograd.CEOptions{Reduction: "avg"}})
		}},
	} {
		before := dev.Stats().Requested.Allocs
		err := autograd.Try(c.f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		if after := dev.Stats().Requested.Allocs; after != before {
			t.Errorf("%s: %d allocations before the error", c.name, after-before)
		}
	}
}

// lceAutocast runs the fused or plain loss of F32 x (n, c) and head w
// (v, c) with bias under autocast to dt, forward and backward, and returns
// the loss and the F32 gradients of x, w and b.
func lceAutocast(t *testing.T, dt dtype.DType, fused bool, n, c, v, chunk int) [][]float64 {
	t.Helper()
	dev := cpu.New(0, device.Options{})
	r := rand.New(rand.NewPCG(5, 6))
	s := autograd.NewScope()
	defer s.Release()
	x := s.FromFloat64s(dev, []int{n, c}, randVals(r, n*c)).Cast(dtype.F32).SetRequiresGrad(true)
	w := s.FromFloat64s(dev, []int{v, c}, randVals(r, v*c)).Cast(dtype.F32).SetRequiresGrad(true)
	b := s.FromFloat64s(dev, []int{v}, randVals(r, v)).Cast(dtype.F32).SetRequiresGrad(true)
	y := s.FromInt64s(dev, []int{n}, nslTargets(9, n, v, false, -100))
	o := autograd.LCEOptions{CEOptions: autograd.CEOptions{LabelSmoothing: 0.1}, Chunk: chunk}
	var loss *autograd.Tensor
	s.Autocast(dt, func() {
		if fused {
			loss = autograd.LinearCrossEntropy(x, w, b, y, o)
		} else {
			loss = autograd.CrossEntropy(autograd.Linear(x, w, b), y, o.CEOptions)
		}
	})
	if loss.DType() != dtype.F32 {
		t.Fatalf("autocast %s fused=%v: loss dtype %s, want f32", dt, fused, loss.DType())
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	out := [][]float64{loss.Float64s()}
	for _, l := range []*autograd.Tensor{x, w, b} {
		if l.Grad().DType() != dtype.F32 {
			t.Fatalf("autocast %s fused=%v: gradient dtype %s, want f32", dt, fused, l.Grad().DType())
		}
		out = append(out, l.Grad().Float64s())
	}
	return out
}

// TestLinearCrossEntropyAutocast checks the fused loss under BF16 and F16
// autocast against CrossEntropy(Linear) under the same autocast: the head
// GEMM runs in 16 bits on both sides, the loss in F32. With one chunk the
// two compute the same roundings, so the results are equal; with smaller
// chunks the 16-bit dW and db are rounded once per chunk instead of once,
// so each element may differ by a few units of the 16-bit format's last
// place (tolerance: chunks × 2^-p relative to the largest element, p = 8
// for BF16, 11 for F16).
func TestLinearCrossEntropyAutocast(t *testing.T) {
	const n, c, v = 40, 16, 24
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
		ulp := math.Ldexp(1, -8)
		if dt == dtype.F16 {
			ulp = math.Ldexp(1, -11)
		}
		want := lceAutocast(t, dt, false, n, c, v, 0)
		for _, chunk := range []int{n, 7} {
			got := lceAutocast(t, dt, true, n, c, v, chunk)
			chunks := float64((n + chunk - 1) / chunk)
			for i := range want {
				top := 0.0
				for _, x := range want[i] {
					top = math.Max(top, math.Abs(x))
				}
				tol := 2 * chunks * ulp * top
				if chunk == n {
					tol = 0
				}
				for j := range want[i] {
					if d := math.Abs(got[i][j] - want[i][j]); d > tol {
						t.Fatalf("%s chunk %d: result %d [%d] = %v fused, %v plain (tolerance %g)", dt, chunk, i, j, got[i][j], want[i][j], tol)
					}
				}
			}
		}
	}
}
