package parallel_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
)

// tpRun is one training run of a GPT, unsplit (ranks 0) or split.
type tpRun struct {
	ranks int
	seq   bool
	dt    dtype.DType
	cfg   nn.GPTConfig
	batch int
	steps int
	ce    autograd.CEOptions
	comm  func(parallel.Communicator) parallel.Communicator // wraps each rank's communicator
	ckpt  bool                                              // checkpoint.Sequential over the blocks
	amp   dtype.DType                                       // the forward's autocast dtype (0: none)
	lazy  bool                                              // the split model from nn.NewDeferredBuilder
}

// tpResult is what one rank (or the unsplit model) ended with.
type tpResult struct {
	init, params, grads map[string][]float64 // after construction; after training; the first step's gradients
	shapes              map[string][]int
	losses              []float64
	dev                 device.Stats
	built               device.Stats // after construction
	stepped             device.Stats // after the first step, before its gradients are freed
}

// tpData returns steps batches of random tokens and targets that a model
// can learn (3·x + 1 mod Vocab), one ignored target in two rows with
// s.ce.Ignore.
func tpData(s tpRun) (xs, ys [][]int64) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := s.batch * s.cfg.Context
	for range s.steps {
		x, y := make([]int64, n), make([]int64, n)
		for i := range x {
			x[i] = int64(rng.IntN(s.cfg.Vocab))
			y[i] = (3*x[i] + 1) % int64(s.cfg.Vocab)
		}
		if s.ce.Ignore {
			y[1], y[n-1] = int64(s.ce.IgnoreIndex), int64(s.ce.IgnoreIndex)
		}
		xs, ys = append(xs, x), append(ys, y)
	}
	return xs, ys
}

// snapshot copies every parameter (or, with grad, its gradient) to the host.
func snapshot(ps []nn.Param, grad bool) map[string][]float64 {
	m := map[string][]float64{}
	for _, p := range ps {
		t := p.T
		if grad {
			if t = t.Grad(); t == nil {
				continue
			}
		}
		m[p.Name] = t.Float64s()
	}
	return m
}

// tpTrain runs s and returns each rank's result (one for the unsplit model).
func tpTrain(t *testing.T, s tpRun) []tpResult {
	t.Helper()
	out, err := tpTrainErr(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tpTrainErr is tpTrain returning Run's error; fault, when set, runs on
// every rank before each step and may fail it.
func tpTrainErr(s tpRun, fault func(rank, step int) error) ([]tpResult, error) {
	xs, ys := tpData(s)
	n := max(s.ranks, 1)
	out := make([]tpResult, n)
	body := func(c parallel.Communicator, r int) error {
		dev := cpu.New(r, device.Options{})
		b := nn.NewBuilder(dev, s.dt, 11)
		if s.lazy && c != nil {
			b = nn.NewDeferredBuilder(dev, s.dt, 11)
		}
		gen := autograd.NewGenerator(5)
		var model nn.Module
		var forward func(idx, tgt *autograd.Tensor) *autograd.Tensor
		if c == nil {
			g, err := nn.NewGPT(b, "gpt", s.cfg, gen)
			if err != nil {
				return err
			}
			model = g
			forward = func(idx, tgt *autograd.Tensor) *autograd.Tensor {
				logits := g.Forward(idx)
				l := logits.View(idx.Len(), s.cfg.Vocab)
				return autograd.CrossEntropy(l, tgt.View(idx.Len()), s.ce)
			}
		} else {
			if s.comm != nil {
				c = s.comm(c)
			}
			g, err := parallel.NewTensorGPT(b, "gpt", s.cfg, c, gen, parallel.TensorOptions{Sequence: s.seq})
			if err != nil {
				return err
			}
			if s.ckpt {
				g.RunBlocks = func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.Sequential(ls, len(ls), x) }
			}
			model = g
			forward = func(idx, tgt *autograd.Tensor) *autograd.Tensor { return g.Loss(g.Forward(idx), tgt, s.ce) }
		}
		defer nn.Release(model)
		res := &out[r]
		res.built = dev.Stats()
		res.init = snapshot(model.Params(), false)
		res.shapes = map[string][]int{}
		for _, p := range model.Params() {
			res.shapes[p.Name] = p.T.Shape()
		}
		opt, err := optim.NewAdamW(model.Params(), optim.AdamConfig{LR: 0.01, MasterWeights: s.dt.IsLowPrecision()})
		if err != nil {
			return err
		}
		defer opt.Release()
		shape := []int{s.batch, s.cfg.Context}
		for step := range s.steps {
			if fault != nil {
				if err := fault(r, step); err != nil {
					return err
				}
			}
			sc := autograd.NewScope()
			err := sc.Run(func() error {
				var loss *autograd.Tensor
				sc.Autocast(s.amp, func() { loss = forward(sc.FromInt64s(dev, shape, xs[step]), sc.FromInt64s(dev, shape, ys[step])) })
				res.losses = append(res.losses, loss.Item())
				return loss.Backward()
			})
			if err != nil {
				return err
			}
			if step == 0 {
				res.grads = snapshot(model.Params(), true)
			}
			if err := opt.Step(); err != nil {
				return err
			}
			if step == 0 {
				res.stepped = dev.Stats()
			}
			nn.ZeroGrad(model)
		}
		res.dev = dev.Stats()
		res.params = snapshot(model.Params(), false)
		return nil
	}
	if s.ranks == 0 {
		return out, body(nil, 0)
	}
	return out, parallel.Run(parallel.NewGroup(n), func(c parallel.Communicator) error { return body(c, c.Rank()) })
}

// shardOf returns rank r's part of the unsplit parameter name (shape
// shape) among n ranks, as the tensor-parallel GPT splits it: the
// vocabulary's rows of the embedding and the head, the heads' rows of each
// of q, k and v in c_attn, the hidden rows of mlp.c_fc, the columns of the
// c_proj weights; everything else whole.
func shardOf(name string, v []float64, shape []int, r, n int) []float64 {
	rows := func(lo, k, cols int) []float64 { return v[lo*cols : (lo+k)*cols] }
	cols := 1
	if len(shape) == 2 {
		cols = shape[1]
	}
	switch {
	case strings.HasSuffix(name, "wte.weight"), strings.HasSuffix(name, "lm_head.weight"), strings.Contains(name, "c_fc."):
		k := shape[0] / n
		return rows(r*k, k, cols)
	case strings.Contains(name, "c_attn."):
		c := shape[0] / 3
		k := c / n
		var out []float64
		for j := range 3 {
			out = append(out, rows(j*c+r*k, k, cols)...)
		}
		return out
	case strings.HasSuffix(name, "c_proj.weight"):
		k := cols / n
		var out []float64
		for i := range shape[0] {
			out = append(out, v[i*cols+r*k:i*cols+(r+1)*k]...)
		}
		return out
	}
	return v
}

// tpCompare checks every rank's values of what (init, params, grads)
// against its part of the unsplit model's: bit for bit with exact, else
// within rel relative to the largest magnitude of the parameter.
func tpCompare(t *testing.T, label string, ref tpResult, got []tpResult, what func(tpResult) map[string][]float64, exact bool, rel float64) {
	t.Helper()
	for r, g := range got {
		for name, want := range what(ref) {
			part := shardOf(name, want, ref.shapes[name], r, len(got))
			have, ok := what(g)[name]
			if !ok || len(have) != len(part) {
				t.Errorf("%s: rank %d %s: %d values, want %d", label, r, name, len(have), len(part))
				continue
			}
			scale := 0.0
			for _, x := range part {
				scale = math.Max(scale, math.Abs(x))
			}
			for i := range part {
				d := math.Abs(have[i] - part[i])
				if (exact && have[i] != part[i]) || (!exact && d > rel*scale) {
					t.Errorf("%s: rank %d %s[%d] = %.17g, unsplit %.17g (scale %.3g)", label, r, name, i, have[i], part[i], scale)
					break
				}
			}
		}
	}
}

// tpLosses checks every rank's losses against the unsplit model's within
// rel.
func tpLosses(t *testing.T, label string, ref tpResult, got []tpResult, rel float64) {
	t.Helper()
	for r, g := range got {
		if len(g.losses) != len(ref.losses) {
			t.Fatalf("%s: rank %d has %d losses, want %d", label, r, len(g.losses), len(ref.losses))
		}
		for i, l := range g.losses {
			if d := math.Abs(l - ref.losses[i]); !(d <= rel*math.Abs(ref.losses[i])) {
				t.Errorf("%s: rank %d step %d loss %.17g, unsplit %.17g (rel %.2g)", label, r, i, l, ref.losses[i], d/math.Abs(ref.losses[i]))
			}
		}
	}
}

// tpSmall is a GPT small enough to train for 20 steps in a test: 4 heads
// of 4, 2 layers, biases, untied head, dropout.
var tpSmall = nn.GPTConfig{Vocab: 16, Context: 8, Layers: 2, Heads: 4, Width: 16, Bias: true, Dropout: 0.1}

// TestTensorParallelGPTMatchesUnsplit trains the GPT unsplit and split 2
// and 4 ways, with and without sequence parallelism (untied with biases,
// tied without), label smoothing and an ignored class, for 20 AdamW steps:
// the initial parameters are the unsplit ones' parts bit for bit; the first
// step's gradients, the 20 losses and the final parameters agree within
// F64 rounding (the row-parallel layers and the parallel cross-entropy sum
// in another order than one device).
func TestTensorParallelGPTMatchesUnsplit(t *testing.T) {
	for _, tie := range []bool{false, true} {
		cfg := tpSmall
		cfg.TieEmbeddings, cfg.Bias = tie, !tie
		ce := autograd.CEOptions{LabelSmoothing: 0.1, Ignore: true, IgnoreIndex: 3}
		base := tpRun{dt: dtype.F64, cfg: cfg, batch: 2, steps: 20, ce: ce}
		ref := tpTrain(t, base)[0]
		for _, n := range []int{2, 4} {
			for _, seq := range []bool{false, true} {
				s := base
				s.ranks, s.seq = n, seq
				label := fmt.Sprintf("tied %v, %d ranks, sequence %v", tie, n, seq)
				got := tpTrain(t, s)
				tpCompare(t, label+" init", ref, got, func(r tpResult) map[string][]float64 { return r.init }, true, 0)
				tpCompare(t, label+" grads", ref, got, func(r tpResult) map[string][]float64 { return r.grads }, false, 1e-12)
				tpLosses(t, label, ref, got, 1e-12)
				tpCompare(t, label+" params", ref, got, func(r tpResult) map[string][]float64 { return r.params }, false, 1e-9)
			}
		}
	}
}

// TestTensorParallelCheckpoint recomputes every block but the last in
// backward (checkpoint.Sequential through RunBlocks) with dropout, 2 and 4
// ranks, with and without sequence parallelism: the recomputation repeats
// the block's collectives and dropout masks, so the losses and parameters
// equal those without checkpointing bit for bit.
func TestTensorParallelCheckpoint(t *testing.T) {
	cfg := tpSmall
	cfg.Layers = 3
	for _, n := range []int{2, 4} {
		for _, seq := range []bool{false, true} {
			s := tpRun{ranks: n, seq: seq, dt: dtype.F64, cfg: cfg, batch: 2, steps: 3}
			plain := tpTrain(t, s)
			s.ckpt = true
			got := tpTrain(t, s)
			label := fmt.Sprintf("%d ranks, sequence %v, checkpointed", n, seq)
			tpLosses(t, label, plain[0], got, 0)
			for r := range got {
				tpCompare(t, label, plain[r], got[r:r+1], func(r tpResult) map[string][]float64 { return r.params }, true, 0)
			}
		}
	}
}

// TestTensorParallelGPTLowerPrecision trains with F32 parameters, BF16
// parameters (F32 masters) and F32 parameters under BF16 and F16
// autocast, t = 2 and 4, with and without sequence parallelism, for 20
// AdamW steps: the initial parameters are the unsplit ones' parts bit for
// bit, the first loss is within tol0 and all 20 within tol, relative. F32
// holds the 1e-5; in 16 bits the ranks' partial sums are rounded
// before Reduce adds them (one device rounds the F32 accumulator once), so
// the losses agree only to 16-bit rounding.
func TestTensorParallelGPTLowerPrecision(t *testing.T) {
	for _, c := range []struct {
		dt, amp   dtype.DType
		tol0, tol float64
	}{{dtype.F32, 0, 1e-6, 1e-5}, {dtype.BF16, 0, 5e-5, 2.5e-2}, {dtype.F32, dtype.BF16, 5e-5, 2.5e-2}, {dtype.F32, dtype.F16, 1e-5, 1e-3}} {
		base := tpRun{dt: c.dt, amp: c.amp, cfg: tpSmall, batch: 2, steps: 20}
		ref := tpTrain(t, base)[0]
		for _, n := range []int{2, 4} {
			for _, seq := range []bool{false, true} {
				s := base
				s.ranks, s.seq = n, seq
				got := tpTrain(t, s)
				label := fmt.Sprintf("%s params, autocast %s, %d ranks, sequence %v", c.dt, c.amp, n, seq)
				tpCompare(t, label+" init", ref, got, func(r tpResult) map[string][]float64 { return r.init }, true, 0)
				tpLosses(t, label, tpResult{losses: ref.losses[:1]}, []tpResult{{losses: got[0].losses[:1]}}, c.tol0)
				tpLosses(t, label, ref, got, c.tol)
			}
		}
	}
}

// TestTensorParallelDeferredBuilder builds the split model from a
// deferred builder: each rank's parameters are its parts of the unsplit
// model's bit for bit; construction allocates the tensor-parallel layers'
// parameters only (the row-parallel biases whole), the position table and
// the LayerNorms materialise at their first use.
func TestTensorParallelDeferredBuilder(t *testing.T) {
	base := tpRun{dt: dtype.F32, cfg: tpSmall, batch: 2, steps: 1}
	ref := tpTrain(t, base)[0]
	split, whole := gptElements(base.cfg)
	for _, n := range []int{2, 4} {
		s := base
		s.ranks, s.lazy = n, true
		got := tpTrain(t, s)
		tpCompare(t, fmt.Sprintf("deferred, %d ranks", n), ref, got, func(r tpResult) map[string][]float64 { return r.init }, true, 0)
		for r, g := range got {
			biases := int64(2 * base.cfg.Layers * base.cfg.Width) // the row-parallel layers' whole biases
			if b, want := g.built.Tag(device.Parameter).Current, (split/int64(n)+biases)*4; b != want {
				t.Errorf("deferred, %d ranks, rank %d: %d parameter bytes built, want %d", n, r, b, want)
			}
			if b, want := g.stepped.Tag(device.Parameter).Current, (split/int64(n)+whole)*4; b != want {
				t.Errorf("deferred, %d ranks, rank %d: %d parameter bytes after a step, want %d", n, r, b, want)
			}
		}
	}
}
