package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

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
// parameters and the seeded source of their initial values. Building the
// same model twice from builders with the same seed gives identical
// parameters. A Builder is not safe for concurrent use.
type Builder struct {
	Dev   *device.Device
	DType dtype.DType
	rng   *rand.Rand
}

// NewBuilder returns a builder for parameters of dtype dt on dev, with
// initial values drawn from a PCG generator seeded with seed.
func NewBuilder(dev *device.Device, dt dtype.DType, seed uint64) *Builder {
	if !dt.IsFloat() {
		panic(fmt.Sprintf("nn.NewBuilder: parameter dtype %s is not a float dtype", dt))
	}
	return &Builder{Dev: dev, DType: dt, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

// Param returns a zero parameter named name.
func (b *Builder) Param(name string, shape ...int) *autograd.Tensor {
	return autograd.Param(b.Dev, b.DType, name, shape...)
}

// Buffer returns a zero buffer (tag Parameter, not trained) named name.
func (b *Builder) Buffer(name string, shape ...int) *autograd.Tensor {
	t := autograd.New(b.Dev, b.DType, device.Parameter, shape...)
	return t.SetName(name)
}

// Uniform fills t with values drawn uniformly from [lo, hi). On a device
// that holds no data (meta) it draws nothing, so huge models build fast.
func (b *Builder) Uniform(t *autograd.Tensor, lo, hi float64) {
	if b.Dev.Kernels() == nil {
		return
	}
	v := make([]float64, t.Len())
	for i := range v {
		v[i] = lo + (hi-lo)*b.rng.Float64()
	}
	t.SetFloat64s(v)
}

// Normal fills t with values drawn from N(mean, std²).
func (b *Builder) Normal(t *autograd.Tensor, mean, std float64) {
	if b.Dev.Kernels() == nil {
		return
	}
	v := make([]float64, t.Len())
	for i := range v {
		v[i] = mean + std*b.rng.NormFloat64()
	}
	t.SetFloat64s(v)
}

// KaimingUniform fills t with PyTorch's default for Linear and Conv2d
// weights, kaiming_uniform(a=√5): U(−1/√fanIn, 1/√fanIn).
func (b *Builder) KaimingUniform(t *autograd.Tensor, fanIn int) {
	bound := 1 / math.Sqrt(float64(max(fanIn, 1)))
	b.Uniform(t, -bound, bound)
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
