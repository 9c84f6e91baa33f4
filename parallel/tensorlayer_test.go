package parallel_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/parallel"
)

// layerOut is what a layer's run gives back: its output and the input's
// and weight's gradients.
type layerOut struct {
	y, dx, dw []float64
}

// randoms returns n values from N(0, 1), seeded.
func randoms(seed uint64, n int) []float64 {
	rng := rand.New(rand.NewPCG(seed, 9))
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// cols returns columns [lo, lo+k) of the (rows, c) matrix v.
func cols(v []float64, rows, c, lo, k int) []float64 {
	var out []float64
	for i := range rows {
		out = append(out, v[i*c+lo:i*c+lo+k]...)
	}
	return out
}

// linearRun computes y = x·Wᵀ + b for x (n, in) and W (out, in) on one
// device, then backward with output gradient g: y, dx, dW.
func linearRun(x, w, b, g []float64, n, in, out int) layerOut {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	xt := s.FromFloat64s(dev, []int{n, in}, x).SetRequiresGrad(true)
	wt := autograd.Param(dev, dtype.F64, "w", out, in)
	wt.SetFloat64s(w)
	bt := autograd.Param(dev, dtype.F64, "b", out)
	bt.SetFloat64s(b)
	defer freeAll(wt, bt)
	return backOut(s, autograd.Linear(xt, wt, bt), g, xt, wt)
}

// backOut runs backward from y with output gradient g and returns y and
// the gradients of x and w (nil x: none).
func backOut(s *autograd.Scope, y *autograd.Tensor, g []float64, x, w *autograd.Tensor) layerOut {
	if err := y.Mul(s.FromFloat64s(y.Device(), y.Shape(), g)).Sum(false).Backward(); err != nil {
		panic(err)
	}
	o := layerOut{y: y.Float64s(), dw: w.Grad().Float64s()}
	if x != nil {
		o.dx = x.Grad().Float64s()
	}
	return o
}

// freeAll releases ts.
func freeAll(ts ...*autograd.Tensor) {
	for _, t := range ts {
		t.Release()
	}
}

// tpLayer runs f on every rank of an n-rank group with its own cpu device
// and scope, and returns each rank's result.
func tpLayer(t *testing.T, n int, f func(c parallel.Communicator, dev *device.Device, s *autograd.Scope) layerOut) []layerOut {
	t.Helper()
	out := make([]layerOut, n)
	err := parallel.Run(parallel.NewGroup(n), func(c parallel.Communicator) error {
		s := autograd.NewScope()
		return s.Run(func() error {
			out[c.Rank()] = f(c, cpu.New(c.Rank(), device.Options{}), s)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// same reports whether a and b are equal bit for bit (exact) or within
// rel of b's largest magnitude.
func same(a, b []float64, exact bool, rel float64) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d values, want %d", len(a), len(b))
	}
	scale := 0.0
	for _, v := range b {
		scale = math.Max(scale, math.Abs(v))
	}
	for i := range a {
		if (exact && a[i] != b[i]) || math.Abs(a[i]-b[i]) > rel*scale {
			return fmt.Errorf("[%d] = %.17g, want %.17g", i, a[i], b[i])
		}
	}
	return nil
}

// TestTensorParallelLinearsExact runs column- and row-parallel Linears
// (with Copy/Reduce, and with GatherLinear/Scatter under sequence
// parallelism) against one device's Linear in F64. Bit for bit wherever
// each element is the same dot product in the same order: the
// column-parallel output and weight gradient, the row-parallel weight and
// input gradients. Within 1e-14 where the ranks' partial sums are added
// (the row-parallel output, the column-parallel input gradient).
func TestTensorParallelLinearsExact(t *testing.T) {
	const rows, in, out = 8, 12, 16
	x, w, b, g := randoms(1, rows*in), randoms(2, out*in), randoms(3, out), randoms(4, rows*out)
	ref := linearRun(x, w, b, g, rows, in, out)
	for _, n := range []int{2, 4} {
		for _, seq := range []bool{false, true} {
			label := fmt.Sprintf("%d ranks, sequence %v", n, seq)
			ko := out / n
			col := tpLayer(t, n, func(c parallel.Communicator, dev *device.Device, s *autograd.Scope) layerOut {
				r := c.Rank()
				l := &parallel.ColumnLinear{In: in, Out: out, Comm: c, Seq: seq}
				l.Weight = param(dev, w[r*ko*in:(r+1)*ko*in], ko, in)
				l.Bias = param(dev, b[r*ko:(r+1)*ko], ko)
				xr, n0 := x, rows
				if seq {
					n0 = rows / n
					xr = x[r*n0*in : (r+1)*n0*in]
				}
				xt := s.FromFloat64s(dev, []int{n0, in}, xr).SetRequiresGrad(true)
				y := l.Forward(xt)
				defer freeAll(l.Weight, l.Bias)
				return backOut(s, y, cols(g, rows, out, r*ko, ko), xt, l.Weight)
			})
			for r, o := range col {
				dx := ref.dx
				if seq {
					dx = ref.dx[r*rows/n*in : (r+1)*rows/n*in]
				}
				check(t, label+fmt.Sprintf(" column rank %d", r), []string{"y", "dW", "dx"},
					[][]float64{o.y, o.dw, o.dx}, [][]float64{cols(ref.y, rows, out, r*ko, ko), ref.dw[r*ko*in : (r+1)*ko*in], dx}, []bool{true, true, false})
			}
			ki := in / n
			row := tpLayer(t, n, func(c parallel.Communicator, dev *device.Device, s *autograd.Scope) layerOut {
				r := c.Rank()
				l := &parallel.RowLinear{In: in, Out: out, Comm: c, Seq: seq}
				l.Weight = param(dev, cols(w, out, in, r*ki, ki), out, ki)
				l.Bias = param(dev, b, out)
				xt := s.FromFloat64s(dev, []int{rows, ki}, cols(x, rows, in, r*ki, ki)).SetRequiresGrad(true)
				y := l.Forward(xt)
				gr := g
				if seq {
					gr = g[r*rows/n*out : (r+1)*rows/n*out]
				}
				defer freeAll(l.Weight, l.Bias)
				return backOut(s, y, gr, xt, l.Weight)
			})
			for r, o := range row {
				y := ref.y
				if seq {
					y = ref.y[r*rows/n*out : (r+1)*rows/n*out]
				}
				check(t, label+fmt.Sprintf(" row rank %d", r), []string{"y", "dW", "dx"},
					[][]float64{o.y, o.dw, o.dx}, [][]float64{y, cols(ref.dw, out, in, r*ki, ki), cols(ref.dx, rows, in, r*ki, ki)}, []bool{false, true, true})
			}
		}
	}
}

// param makes an F64 parameter holding v.
func param(dev *device.Device, v []float64, shape ...int) *autograd.Tensor {
	p := autograd.Param(dev, dtype.F64, "p", shape...)
	p.SetFloat64s(v)
	return p
}

// check compares each got against want, bit for bit where exact says
// so, else within 1e-14 (tol[0] when given).
func check(t *testing.T, label string, names []string, got, want [][]float64, exact []bool, tol ...float64) {
	t.Helper()
	rel := 1e-14
	if len(tol) > 0 {
		rel = tol[0]
	}
	for i := range got {
		if err := same(got[i], want[i], exact[i], rel); err != nil {
			t.Errorf("%s %s: %v", label, names[i], err)
		}
	}
}

// TestTensorParallelVocabExact checks the vocabulary-parallel embedding
// (bit for bit: each row is found on one rank and the others add zeros)
// and the parallel cross-entropy (within 1e-14 of autograd.CrossEntropy
// in F64, 1e-6 for BF16 logits, every reduction, with label smoothing and
// an ignored class; the logits' gradient likewise) against one device.
func TestTensorParallelVocabExact(t *testing.T) {
	const rows, vocab, c = 8, 16, 4
	ids := make([]int64, rows)
	for i := range ids {
		ids[i] = int64((5*i + 3) % vocab)
	}
	ids[2] = 3 // the ignored class below
	table, g := randoms(5, vocab*c), randoms(6, rows*c)
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	wt := param(dev, table, vocab, c)
	ref := backOut(s, autograd.Embedding(wt, s.FromInt64s(dev, []int{rows}, ids)), g, nil, wt)
	s.Release()
	wt.Release()
	for _, n := range []int{2, 4} {
		for _, seq := range []bool{false, true} {
			k := vocab / n
			got := tpLayer(t, n, func(cm parallel.Communicator, dev *device.Device, s *autograd.Scope) layerOut {
				r := cm.Rank()
				e := &parallel.VocabEmbedding{Vocab: vocab, Lo: r * k, C: c, Comm: cm, Seq: seq, Weight: param(dev, table[r*k*c:(r+1)*k*c], k, c)}
				defer freeAll(e.Weight)
				y := e.Forward(s.FromInt64s(dev, []int{rows}, ids))
				gr := g
				if seq {
					gr = g[r*rows/n*c : (r+1)*rows/n*c]
				}
				return backOut(s, y, gr, nil, e.Weight)
			})
			for r, o := range got {
				want := ref.y
				if seq {
					want = ref.y[r*rows/n*c : (r+1)*rows/n*c]
				}
				check(t, fmt.Sprintf("embedding, %d ranks, sequence %v, rank %d", n, seq, r), []string{"y", "dW"},
					[][]float64{o.y, o.dw}, [][]float64{want, ref.dw[r*k*c : (r+1)*k*c]}, []bool{true, true})
			}
		}
	}
	logits := randoms(7, rows*vocab)
	for _, dt := range []dtype.DType{dtype.F64, dtype.BF16} {
		tol := 1e-14
		if dt == dtype.BF16 {
			tol = 1e-6
		}
		for _, red := range []string{"mean", "sum", "none"} {
			for _, o := range []autograd.CEOptions{{Reduction: red}, {Reduction: red, LabelSmoothing: 0.2, Ignore: true, IgnoreIndex: 3}} {
				want := ceRun(nil, dt, logits, ids, rows, vocab, 0, o)
				for _, n := range []int{2, 4} {
					k := vocab / n
					got := tpLayer(t, n, func(cm parallel.Communicator, dev *device.Device, s *autograd.Scope) layerOut {
						return ceRun(cm, dt, cols(logits, rows, vocab, cm.Rank()*k, k), ids, rows, k, vocab, o)
					})
					for r, g := range got {
						label := fmt.Sprintf("cross-entropy %s %+v, %d ranks, rank %d", dt, o, n, r)
						check(t, label, []string{"loss", "dlogits"}, [][]float64{g.y, g.dx}, [][]float64{want.y, cols(want.dx, rows, vocab, r*k, k)}, []bool{false, false}, tol)
					}
				}
			}
		}
	}
}

// ceRun computes the cross-entropy of logits (rows, v) of dtype dt against
// ids — autograd's on one device for a nil c, else parallel.CrossEntropy
// of this rank's classes of a vocabulary of whole — and its gradient for
// an output gradient of 1 (mean, sum) or 1, 2, … (none).
func ceRun(c parallel.Communicator, dt dtype.DType, logits []float64, ids []int64, rows, v, whole int, o autograd.CEOptions) layerOut {
	r := 0
	if c != nil {
		r = c.Rank()
	}
	dev := cpu.New(r, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	lf := s.FromFloat64s(dev, []int{rows, v}, logits)
	lt := s.LeafOf(lf.Cast(dt))
	tg := s.FromInt64s(dev, []int{rows}, ids)
	var loss *autograd.Tensor
	if c == nil {
		loss = autograd.CrossEntropy(lt, tg, o)
	} else {
		loss = parallel.CrossEntropy(c, lt, tg, r*v, whole, o)
	}
	up := make([]float64, max(loss.Len(), 1))
	for i := range up {
		up[i] = float64(i + 1)
	}
	seed := s.FromFloat64s(dev, loss.Shape(), up).Cast(loss.DType())
	if err := loss.BackwardWith(seed); err != nil {
		panic(err)
	}
	return layerOut{y: loss.Float64s(), dx: lt.TakeGrad().Float64s()}
}

// TestTensorParallelGather checks Gather on its own: forward concatenates
// the ranks' rows in rank order (bit for bit), backward gives each rank
// its rows of the sum of the ranks' output gradients — here (r+1)·G on
// rank r, so (1 + … + t)·G's rows.
func TestTensorParallelGather(t *testing.T) {
	const rows, c = 8, 3
	x, g := randoms(8, rows*c), randoms(9, rows*c)
	for _, n := range []int{2, 4} {
		k := rows / n
		got := tpLayer(t, n, func(cm parallel.Communicator, dev *device.Device, s *autograd.Scope) layerOut {
			r := cm.Rank()
			xt := s.FromFloat64s(dev, []int{k, c}, x[r*k*c:(r+1)*k*c]).SetRequiresGrad(true)
			y := parallel.Gather(cm, xt)
			gr := make([]float64, len(g))
			for i, v := range g {
				gr[i] = float64(r+1) * v
			}
			if err := y.Mul(s.FromFloat64s(dev, y.Shape(), gr)).Sum(false).Backward(); err != nil {
				panic(err)
			}
			return layerOut{y: y.Float64s(), dx: xt.Grad().Float64s()}
		})
		for r, o := range got {
			want := make([]float64, k*c)
			for i := range want {
				for q := range n {
					want[i] += float64(q+1) * g[r*k*c+i]
				}
			}
			check(t, fmt.Sprintf("gather, %d ranks, rank %d", n, r), []string{"y", "dx"}, [][]float64{o.y, o.dx}, [][]float64{x, want}, []bool{true, false})
		}
	}
}
