package nn

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Param is a tensor a module owns, with its full dotted name
// ("layer1.0.conv1.weight"). Buffers (batch-norm running statistics) are
// params that are not trained.
type Param struct {
	Name   string
	T      *autograd.Tensor
	Buffer bool
}

// Module is implemented by every layer and model.
type Module interface {
	// Params lists the module's parameters and buffers, its children's
	// included, in a fixed order. A tensor shared by several layers
	// (tied or ALBERT-style weights) is listed once.
	Params() []Param
	// Train switches training mode (dropout, batch-norm statistics) on or
	// off, for the module and its children.
	Train(on bool)
}

// Layer is a module with a one-tensor forward: what Sequential and
// activation checkpointing compose. Forward never releases its input; it
// releases the intermediates it makes itself.
type Layer interface {
	Module
	Forward(x *autograd.Tensor) *autograd.Tensor
}

// Builder carries what every constructor needs: the device and dtype of the
// parameters and the seed of their initial values. Every fill a builder
// makes (Uniform, Normal, KaimingUniform, Fill, and the zeros of Param and
// Buffer) is kept as an Init record: the values of the k-th random fill of
// the build are the stream k of the seed's counter-based generator (see
// Init), so building the same model twice from builders with the same seed
// gives identical parameters, and any element range of a parameter can be
// produced alone. The stream is keyed by the fill's index in build order,
// not by the parameter's name: indices are unique in every model, while
// names need not be (two layers given the same name would otherwise draw
// the same values). A Builder is not safe for concurrent use.
type Builder struct {
	Dev      *device.Device
	DType    dtype.DType
	seed     uint64
	streams  uint64 // random fills made so far
	deferred bool
	inits    map[*autograd.Tensor]Init
}

// NewBuilder returns a builder for parameters of dtype dt on dev, with
// initial values drawn from seed's streams.
func NewBuilder(dev *device.Device, dt dtype.DType, seed uint64) *Builder {
	if !dt.IsFloat() {
		panic(fmt.Sprintf("nn.NewBuilder: parameter dtype %s is not a float dtype", dt))
	}
	return &Builder{Dev: dev, DType: dt, seed: seed, inits: map[*autograd.Tensor]Init{}}
}

// NewDeferredBuilder returns a builder like NewBuilder whose parameters
// get no storage: they are unbound leaves on dev (autograd.UnboundParam)
// and the builder keeps how to initialise each (Init). The model's
// structure costs no device memory. parallel.NewDDP, given the builder
// (DDPConfig.Builder), writes each rank's shard of the parameters (stage 3)
// or the flat buffer (stages 0–2) directly from the records; a parameter
// used without it materialises whole on first use, with the same values a
// NewBuilder of the same seed gives. Buffers (batch-norm statistics) are
// allocated and filled as usual.
func NewDeferredBuilder(dev *device.Device, dt dtype.DType, seed uint64) *Builder {
	b := NewBuilder(dev, dt, seed)
	b.deferred = true
	return b
}

// Init returns the record of how the builder initialised t, the last
// fill it made of t; false if t is not the builder's.
func (b *Builder) Init(t *autograd.Tensor) (Init, bool) {
	in, ok := b.inits[t]
	return in, ok
}

// Param returns a zero parameter named name (deferred: without storage,
// zero when materialised).
func (b *Builder) Param(name string, shape ...int) *autograd.Tensor {
	if !b.deferred {
		t := autograd.Param(b.Dev, b.DType, name, shape...)
		b.inits[t] = Init{Kind: InitFill}
		return t
	}
	t := autograd.UnboundParam(b.Dev, b.DType, name, shape...)
	b.inits[t] = Init{Kind: InitFill}
	t.SetFetch(b.materialise)
	return t
}

// materialise is a deferred parameter's fetch function: it gives the
// parameter storage holding its initial values and removes itself.
func (b *Builder) materialise(leaf *autograd.Tensor) {
	v := autograd.Param(b.Dev, b.DType, leaf.Name(), leaf.Shape()...)
	defer v.Release()
	b.inits[leaf].Write(v, 0)
	leaf.Bind(v)
	leaf.SetFetch(nil)
}

// Buffer returns a zero buffer (tag Parameter, not trained) named name.
func (b *Builder) Buffer(name string, shape ...int) *autograd.Tensor {
	t := autograd.New(b.Dev, b.DType, device.Parameter, shape...)
	b.inits[t] = Init{Kind: InitFill}
	return t.SetName(name)
}

// Uniform fills t with values drawn uniformly from [lo, hi). On a device
// that holds no data (meta) it draws nothing, so huge models build fast.
func (b *Builder) Uniform(t *autograd.Tensor, lo, hi float64) {
	b.apply(t, Init{Kind: InitUniform, A: lo, B: hi, Seed: b.seed, Stream: b.next()})
}

// Normal fills t with values drawn from N(mean, std²).
func (b *Builder) Normal(t *autograd.Tensor, mean, std float64) {
	b.apply(t, Init{Kind: InitNormal, A: mean, B: std, Seed: b.seed, Stream: b.next()})
}

// Fill sets every element of t to v.
func (b *Builder) Fill(t *autograd.Tensor, v float64) {
	b.apply(t, Init{Kind: InitFill, A: v})
}

// KaimingUniform fills t with PyTorch's default for Linear and Conv2d
// weights, kaiming_uniform(a=√5): U(−1/√fanIn, 1/√fanIn).
func (b *Builder) KaimingUniform(t *autograd.Tensor, fanIn int) {
	bound := 1 / math.Sqrt(float64(max(fanIn, 1)))
	b.Uniform(t, -bound, bound)
}

// next hands out the next random stream.
func (b *Builder) next() uint64 {
	b.streams++
	return b.streams - 1
}

// apply records in as t's initialisation and writes it, unless t is a
// deferred parameter still without storage.
func (b *Builder) apply(t *autograd.Tensor, in Init) {
	b.inits[t] = in
	if b.deferred && t.Unbound() {
		return
	}
	in.Write(t, 0)
}

// Release frees every parameter and buffer of m (and their gradients).
func Release(m Module) {
	for _, p := range m.Params() {
		p.T.Release()
	}
}

// ZeroGrad frees the gradients of m's parameters.
func ZeroGrad(m Module) {
	for _, p := range m.Params() {
		p.T.ZeroGrad()
	}
}

// Trainable returns the parameters of m that are not buffers.
func Trainable(m Module) []Param {
	var out []Param
	for _, p := range m.Params() {
		if !p.Buffer {
			out = append(out, p)
		}
	}
	return out
}

// ParamBytes returns the bytes of m's parameters and buffers (each shared
// tensor counted once).
func ParamBytes(m Module) int64 {
	var n int64
	for _, p := range m.Params() {
		n += p.T.Bytes()
	}
	return n
}

// Count returns the number of trainable elements of m.
func Count(m Module) int64 {
	var n int64
	for _, p := range Trainable(m) {
		n += int64(p.T.Len())
	}
	return n
}

// collect concatenates children's params, listing each tensor once.
func collect(groups ...[]Param) []Param {
	seen := map[*autograd.Tensor]bool{}
	var out []Param
	for _, g := range groups {
		for _, p := range g {
			if !seen[p.T] {
				seen[p.T] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// join makes a dotted name.
func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
