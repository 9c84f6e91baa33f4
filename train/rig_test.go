package train_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

// setup describes a tiny training run for the failed-step tests.
type setup struct {
	model    string      // "gpt" (dropout 0.1) or "resnet" (BatchNorm)
	onCPU    bool        // cpu (values are real) or meta (memory only)
	accum    int         // micro-batches per step
	scaler   bool        // f16 parameters, f32 masters, an enabled loss scaler
	autocast dtype.DType // the forward's autocast dtype
	ckpt     bool        // checkpoint the blocks in two segments
	capacity int64       // the device's capacity (0: unlimited)
	steps    []int       // the steps to fail at every allocation
	// open, when set, opens the device instead (onCPU is then ignored):
	// cuda_test.go's emulated cuda device.
	open func(device.Options) (*device.Device, error)
}

func (c setup) String() string {
	s := fmt.Sprintf("%s accum %d", c.model, c.accum)
	if c.scaler {
		s += " fp16+scaler"
	}
	if c.autocast != dtype.Invalid {
		s += " autocast " + c.autocast.String()
	}
	if c.ckpt {
		s += " checkpoint"
	}
	switch {
	case c.open != nil:
		return s + " on an opened device"
	case c.onCPU:
		return s + " on cpu"
	}
	return s + " on meta"
}

// rig is a model, its optimizer and a Stepper on a device of its own.
type rig struct {
	dev   *device.Device
	model nn.Module
	opt   optim.Optimizer
	st    *train.Stepper
	gen   *autograd.Generator
	fwd   func(s *autograd.Scope, i int) *autograd.Tensor
	// cursor counts the micro-batches read: the data loader's position.
	cursor uint64
}

// newRig builds c's run. Each micro-batch reads the next rows of a fixed
// random data set; the Stepper rewinds the cursor when a step fails.
func newRig(t *testing.T, c setup) *rig {
	t.Helper()
	r, err := tryRig(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryRig is newRig returning the error of a build that does not fit the
// capacity (the device is closed then).
func tryRig(c setup) (_ *rig, err error) {
	r := &rig{gen: autograd.NewGenerator(7)}
	o := device.Options{Capacity: c.capacity}
	switch {
	case c.open != nil:
		if r.dev, err = c.open(o); err != nil {
			return nil, err
		}
	case c.onCPU:
		r.dev = cpu.New(0, o)
	default:
		r.dev = meta.New(0, o)
	}
	defer func() {
		if err != nil {
			if r.model != nil {
				nn.Release(r.model)
			}
			r.dev.Close()
		}
	}()
	pdt := dtype.F32
	if c.scaler {
		pdt = dtype.F16
	}
	b := nn.NewBuilder(r.dev, pdt, 1)
	var hook *func([]nn.Layer, *autograd.Tensor) *autograd.Tensor
	if c.model == "gpt" {
		var g *nn.GPT
		g, err = nn.NewGPT(b, "gpt", nn.GPTConfig{Vocab: 16, Context: 8, Layers: 2, Heads: 2, Width: 16, Dropout: 0.1, Bias: true, TieEmbeddings: true}, r.gen)
		if err == nil {
			r.model, hook, r.fwd = g, &g.RunBlocks, gptLoss(r, g)
		}
	} else {
		var rn *nn.ResNet
		rn, err = nn.SmallResNet(b, "resnet", nn.ResNetConfig{Widths: []int{4, 4, 8}, InChannels: 1, Classes: 4})
		if err == nil {
			r.model, hook, r.fwd = rn, &rn.RunBlocks, resnetLoss(r, rn, pdt)
		}
	}
	if err != nil {
		return nil, err
	}
	if c.ckpt {
		*hook = func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.Sequential(ls, 2, x) }
	}
	if r.opt, err = optim.NewAdamW(r.model.Params(), optim.AdamConfig{LR: 0.01, MasterWeights: c.scaler}); err != nil {
		return nil, err
	}
	r.st = &train.Stepper{Opt: r.opt, Accum: c.accum, Autocast: c.autocast, Clip: 1, Model: r.model,
		Schedule: optim.CosineWarmup{Base: 0.01, Warmup: 2, Total: 20}}
	r.st.SaveState = func() func() {
		at := r.cursor
		return func() { r.cursor = at }
	}
	if c.scaler {
		r.st.Scaler = amp.NewScaler(dtype.F16, amp.ScalerConfig{InitScale: 256})
	}
	return r, nil
}

// rows reads the next micro-batch, n row indices of a set of 64, as a
// data loader would: each read advances the cursor (which the Stepper's
// SaveState rewinds when a step fails).
func (r *rig) rows(n int) []int {
	rng := rand.New(rand.NewPCG(r.cursor, 1))
	r.cursor++
	out := make([]int, n)
	for j := range out {
		out[j] = rng.IntN(64)
	}
	return out
}

func gptLoss(r *rig, g *nn.GPT) func(*autograd.Scope, int) *autograd.Tensor {
	const micro, T, V = 2, 8, 16
	rng := rand.New(rand.NewPCG(3, 3))
	set := make([]int64, 64*(T+1))
	for i := range set {
		set[i] = int64(rng.IntN(V))
	}
	return func(s *autograd.Scope, _ int) *autograd.Tensor {
		var x, y []int64
		for _, row := range r.rows(micro) {
			x = append(x, set[row*(T+1):row*(T+1)+T]...)
			y = append(y, set[row*(T+1)+1:(row+1)*(T+1)]...)
		}
		logits := g.Forward(s.FromInt64s(r.dev, []int{micro, T}, x))
		flat := logits.Reshape(-1, V)
		logits.Release()
		return autograd.CrossEntropy(flat, s.FromInt64s(r.dev, []int{len(y)}, y), autograd.CEOptions{})
	}
}

func resnetLoss(r *rig, m *nn.ResNet, pdt dtype.DType) func(*autograd.Scope, int) *autograd.Tensor {
	const micro, side, classes = 4, 8, 4
	rng := rand.New(rand.NewPCG(4, 4))
	set := make([]float32, 64*side*side)
	for i := range set {
		set[i] = float32(rng.NormFloat64())
	}
	return func(s *autograd.Scope, _ int) *autograd.Tensor {
		var x []float32
		var y []int64
		for _, row := range r.rows(micro) {
			x = append(x, set[row*side*side:(row+1)*side*side]...)
			y = append(y, int64(row%classes))
		}
		xs := s.FromFloat32s(r.dev, []int{micro, 1, side, side}, x)
		if pdt != dtype.F32 {
			xs = xs.Cast(pdt)
		}
		return autograd.CrossEntropy(m.Forward(xs), s.FromInt64s(r.dev, []int{micro}, y), autograd.CEOptions{})
	}
}

func (r *rig) release() {
	r.opt.Release()
	nn.Release(r.model)
	if err := r.dev.Close(); err != nil {
		panic(err)
	}
}

// step runs one step that must succeed and returns its loss.
func (r *rig) step(t *testing.T) float64 {
	t.Helper()
	loss, _, err := r.st.Step(r.fwd)
	if err != nil {
		t.Fatalf("step %d: %v", r.st.Steps(), err)
	}
	return loss
}

// memory is what a device holds: its live groups, blocks and bytes.
type memory struct {
	groups []device.LiveGroup
	blocks int
	bytes  int64
}

func memoryOf(d *device.Device) memory {
	return memory{d.Live(), d.LiveBlocks(), d.Stats().Requested.Current}
}

// diff describes how b differs from a ("" when equal).
func (a memory) diff(b memory) string {
	if a.blocks == b.blocks && a.bytes == b.bytes && slices.Equal(a.groups, b.groups) {
		return ""
	}
	delta := map[string]int64{}
	for _, g := range a.groups {
		delta[g.Tag.String()+" "+g.Creator] -= g.Bytes
	}
	for _, g := range b.groups {
		delta[g.Tag.String()+" "+g.Creator] += g.Bytes
	}
	var out []string
	for k, v := range delta {
		if v != 0 {
			out = append(out, fmt.Sprintf("%s %+d B", k, v))
		}
	}
	sort.Strings(out)
	return fmt.Sprintf("%d blocks, %d bytes, was %d blocks, %d bytes: %v", b.blocks, b.bytes, a.blocks, a.bytes, out)
}

// state is everything a failed step must leave as it was, as bits: every
// parameter and buffer, the optimizer's tensors and scalars, which
// parameters have a gradient, the generator, the scaler and the Stepper's
// counter.
func (r *rig) state() map[string][]uint64 {
	st := map[string][]uint64{}
	values := func(t *autograd.Tensor) []float64 {
		if r.dev.Kernels() == nil {
			return nil // meta holds no values: reading gives zeros
		}
		return t.Float64s()
	}
	bits := func(name string, vs []float64) {
		b := make([]uint64, len(vs))
		for i, v := range vs {
			b[i] = math.Float64bits(v)
		}
		st[name] = b
	}
	for _, p := range r.model.Params() {
		bits("param "+p.Name, values(p.T))
		if p.T.Grad() != nil {
			st["grad "+p.Name] = nil
		}
	}
	os := r.opt.State()
	for n, t := range os.Tensors {
		bits("optimizer "+n, values(t))
	}
	for n, v := range os.Scalars {
		bits("optimizer "+n, []float64{v})
	}
	g := r.gen.State()
	st["generator"] = []uint64{g.Seed, g.Offset}
	st["steps"] = []uint64{uint64(r.st.Steps())}
	st["data cursor"] = []uint64{r.cursor}
	if sc := r.st.Scaler; sc != nil {
		s := sc.State()
		bits("scaler", []float64{s.Scale, float64(s.GrowthTracker), float64(s.Skipped)})
	}
	return st
}

// stateDiff names the entries that differ between two states.
func stateDiff(a, b map[string][]uint64) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || !slices.Equal(v, w) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k+" (new)")
		}
	}
	sort.Strings(out)
	return out
}
