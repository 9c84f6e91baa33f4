package checkpoint_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// block is x + W2·dropout(gelu(W1·x)), optionally with batch-norm on the
// hidden units: a residual block whose forward draws random numbers.
type block struct {
	w1, w2     *autograd.Tensor
	bnw, bnb   *autograd.Tensor
	rm, rv     *autograd.Tensor
	gen        *autograd.Generator
	p          float64
	training   bool
	batchNorm  bool
	forwardRan *int
}

func newBlock(dev *device.Device, dt dtype.DType, width int, rng *rand.Rand, gen *autograd.Generator, bn bool) *block {
	p := func(shape ...int) *autograd.Tensor {
		t := autograd.Param(dev, dt, "w", shape...)
		v := make([]float64, t.Len())
		for i := range v {
			v[i] = rng.NormFloat64() / math.Sqrt(float64(width))
		}
		t.SetFloat64s(v)
		return t
	}
	b := &block{w1: p(2*width, width), w2: p(width, 2*width), gen: gen, p: 0.2, training: true, batchNorm: bn}
	if bn {
		b.bnw, b.bnb = p(2*width), p(2*width)
		b.rm = autograd.New(dev, dt, device.Parameter, 2*width)
		b.rv = autograd.New(dev, dt, device.Parameter, 2*width)
		b.rv.Fill(1)
	}
	return b
}

func (b *block) Forward(x *autograd.Tensor) *autograd.Tensor {
	if b.forwardRan != nil {
		*b.forwardRan++
	}
	h := autograd.Linear(x, b.w1, nil)
	if b.batchNorm {
		n := autograd.BatchNorm2d(h, b.bnw, b.bnb, b.rm, b.rv, b.training, 0.1, 1e-5)
		h.Release()
		h = n
	}
	a := h.GELU()
	h.Release()
	d := autograd.Dropout(a, b.p, b.gen, b.training)
	a.Release()
	y := autograd.Linear(d, b.w2, nil)
	d.Release()
	out := x.Add(y)
	y.Release()
	return out
}

func (b *block) Params() []nn.Param {
	ps := []nn.Param{{Name: "w1", T: b.w1}, {Name: "w2", T: b.w2}}
	if b.batchNorm {
		ps = append(ps, nn.Param{Name: "bnw", T: b.bnw}, nn.Param{Name: "bnb", T: b.bnb},
			nn.Param{Name: "rm", T: b.rm, Buffer: true}, nn.Param{Name: "rv", T: b.rv, Buffer: true})
	}
	return ps
}

func (b *block) Train(on bool) { b.training = on }

type model struct {
	layers []nn.Layer
	blocks []*block
}

func newModel(dev *device.Device, dt dtype.DType, n, width int, bn bool) *model {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := autograd.NewGenerator(7)
	m := &model{}
	for range n {
		b := newBlock(dev, dt, width, rng, gen, bn)
		m.blocks = append(m.blocks, b)
		m.layers = append(m.layers, b)
	}
	return m
}

func (m *model) release() {
	for _, b := range m.blocks {
		for _, p := range b.Params() {
			p.T.Release()
		}
	}
}

// step runs forward and backward with segments (0 = plain) and returns the
// loss, every parameter gradient and buffer, and the activation peak.
func step(t *testing.T, dev *device.Device, m *model, segments int, dt dtype.DType, ac dtype.DType) (float64, [][]float64, int64) {
	t.Helper()
	return stepWith(t, dev, m, dt, ac, func(x *autograd.Tensor) *autograd.Tensor {
		if segments == 0 {
			return nn.NewSequential(m.layers...).Forward(x)
		}
		return checkpoint.Sequential(m.layers, segments, x)
	})
}

// stepWith runs forward through fwd, then backward, and returns the loss,
// every parameter gradient and buffer, and the activation peak.
func stepWith(t *testing.T, dev *device.Device, m *model, dt dtype.DType, ac dtype.DType, fwd func(*autograd.Tensor) *autograd.Tensor) (float64, [][]float64, int64) {
	t.Helper()
	const batch = 8
	width := m.blocks[0].w1.Dim(1)
	x := make([]float64, batch*width)
	for i := range x {
		x[i] = math.Sin(float64(i))
	}
	s := autograd.NewScope()
	defer s.Release()
	dev.ResetPeak()
	var loss *autograd.Tensor
	s.Autocast(ac, func() {
		xs := s.FromFloat64s(dev, []int{batch, width}, x)
		if dt != dtype.F64 {
			c := xs.Cast(dt)
			xs.Release()
			xs = c
		}
		loss = fwd(xs).Pow(2).Mean(false)
	})
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	peak := dev.Stats().ByTag[device.Activation].Peak
	var gs [][]float64
	for _, b := range m.blocks {
		for _, p := range b.Params() {
			if p.Buffer {
				gs = append(gs, p.T.Float64s())
			} else {
				gs = append(gs, p.T.Grad().Float64s())
				p.T.ZeroGrad()
			}
		}
	}
	return loss.Item(), gs, peak
}

func TestCheckpointGradientsEqualPlainExactly(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F64, dtype.F32} {
		for _, bn := range []bool{false, true} {
			for _, seg := range []int{1, 2, 3, 5} {
				dev := cpu.New(0, device.Options{})
				plain := newModel(dev, dt, 5, 6, bn)
				ckpt := newModel(dev, dt, 5, 6, bn)
				l1, g1, _ := step(t, dev, plain, 0, dt, dtype.Invalid)
				l2, g2, _ := step(t, dev, ckpt, seg, dt, dtype.Invalid)
				if l1 != l2 {
					t.Errorf("%s bn=%v segments=%d: loss %v, plain %v", dt, bn, seg, l2, l1)
				}
				for i := range g1 {
					for j := range g1[i] {
						if g1[i][j] != g2[i][j] {
							t.Fatalf("%s bn=%v segments=%d: gradient/buffer %d[%d] = %v, plain %v (must be identical: same operations in the same order)", dt, bn, seg, i, j, g2[i][j], g1[i][j])
						}
					}
				}
				plain.release()
				ckpt.release()
				if dev.LiveBlocks() != 0 {
					t.Fatalf("leak: %v", dev.Live())
				}
			}
		}
	}
}

func TestCheckpointUnderAutocastMatchesAutocast(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	plain := newModel(dev, dtype.F32, 4, 6, false)
	ckpt := newModel(dev, dtype.F32, 4, 6, false)
	_, g1, _ := step(t, dev, plain, 0, dtype.F32, dtype.BF16)
	_, g2, _ := step(t, dev, ckpt, 2, dtype.F32, dtype.BF16)
	for i := range g1 {
		for j := range g1[i] {
			if g1[i][j] != g2[i][j] {
				t.Fatalf("gradient %d[%d] = %v, autocast plain %v: recomputation did not run under the forward's autocast", i, j, g2[i][j], g1[i][j])
			}
		}
	}
	plain.release()
	ckpt.release()
}

// TestCheckpointActivationsGrowAsSqrtN fits the exponent of the activation
// peak against depth on the allocator's exact numbers.
func TestCheckpointActivationsGrowAsSqrtN(t *testing.T) {
	ns := []int{4, 9, 16, 25, 36, 64}
	var plain, ckpt []float64
	for _, n := range ns {
		dev := meta.New(0, device.Options{}) // exact bytes, no arithmetic: fast
		m := newModel(dev, dtype.F32, n, 64, false)
		_, _, p := step(t, dev, m, 0, dtype.F32, dtype.Invalid)
		_, _, c := step(t, dev, m, 0-0+int(math.Ceil(math.Sqrt(float64(n)))), dtype.F32, dtype.Invalid)
		plain = append(plain, float64(p))
		ckpt = append(ckpt, float64(c))
		m.release()
		t.Logf("n=%2d  plain %8d B  checkpointed (%d segments) %8d B", n, p, int(math.Ceil(math.Sqrt(float64(n)))), c)
	}
	ep, ec := slope(ns, plain), slope(ns, ckpt)
	t.Logf("exponents: plain %.3f, checkpointed %.3f", ep, ec)
	if ep < 0.9 {
		t.Errorf("plain activation peak grows as n^%.3f, want ~n^1", ep)
	}
	if ec > 0.6 {
		t.Errorf("checkpointed activation peak grows as n^%.3f, want ≤ n^0.6", ec)
	}
}

// slope is the least-squares slope of log(y) against log(n).
func slope(ns []int, ys []float64) float64 {
	var sx, sy, sxx, sxy float64
	for i, n := range ns {
		x, y := math.Log(float64(n)), math.Log(ys[i])
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	k := float64(len(ns))
	return (k*sxy - sx*sy) / (k*sxx - sx*sx)
}

func TestNestedCheckpoint(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	plain := newModel(dev, dtype.F64, 4, 6, false)
	nested := newModel(dev, dtype.F64, 4, 6, false)
	_, g1, _ := step(t, dev, plain, 0, dtype.F64, dtype.Invalid)
	// Wrap pairs of blocks in an inner checkpoint, the whole in an outer one.
	inner := func(bs []nn.Layer) nn.Layer { return seqLayer{bs} }
	nested.layers = []nn.Layer{inner(nested.layers[:2]), inner(nested.layers[2:])}
	_, g2, _ := step(t, dev, nested, 2, dtype.F64, dtype.Invalid)
	for i := range g1 {
		for j := range g1[i] {
			if g1[i][j] != g2[i][j] {
				t.Fatalf("nested: gradient %d[%d] = %v, plain %v", i, j, g2[i][j], g1[i][j])
			}
		}
	}
	plain.release()
	nested.release()
}

// seqLayer checkpoints its layers as one inner segment.
type seqLayer struct{ layers []nn.Layer }

func (q seqLayer) Forward(x *autograd.Tensor) *autograd.Tensor {
	return checkpoint.Run(func(in []*autograd.Tensor) []*autograd.Tensor {
		return []*autograd.Tensor{nn.NewSequential(q.layers...).Forward(in[0])}
	}, x)[0]
}
func (q seqLayer) Params() []nn.Param { return nil }
func (q seqLayer) Train(bool)         {}

func TestNonDeterministicRecomputationFails(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	m := newModel(dev, dtype.F64, 2, 6, false)
	defer m.release()
	s := autograd.NewScope()
	defer s.Release()
	x := s.Full(dev, dtype.F64, 0.5, 3, 6)
	calls := 0
	out := checkpoint.Run(func(in []*autograd.Tensor) []*autograd.Tensor {
		calls++
		h := m.layers[0].Forward(in[0])
		if calls > 1 { // behaves differently when recomputed
			n := h.Exp()
			h.Release()
			h = n
		}
		return []*autograd.Tensor{h}
	}, x)[0]
	err := out.Sum(false).Backward()
	if err == nil || !strings.Contains(err.Error(), "not deterministic") {
		t.Fatalf("err = %v, want a determinism error", err)
	}
}
