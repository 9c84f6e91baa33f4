package conformance

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// Marks of a step at which the accounting is compared.
const (
	markLeaves   = iota // the inputs made
	markForward         // the output computed (and read)
	markBackward        // backward done
	markReleased        // the step's scope released
	markZeroed          // the inputs' gradients freed
	markDone            // the inputs released
	numMarks
)

var markNames = [numMarks]string{"inputs made", "forward", "backward", "scope released", "gradients freed", "inputs released"}

// data are a case's host values: the inputs (floats rounded to the dtype
// under test) and the output gradient, before rounding.
type data struct {
	vals [][]float64
	ints [][]int64
	dy   []float64
}

// result is what one step observed.
type result struct {
	out       []float64 // float output, or the integer output as floats
	isInt     bool
	grads     [][]float64 // per input; nil where none reached it
	marks     [numMarks]device.Stats
	base      device.Stats       // the device's snapshot before the step (what it held of its own)
	before    []device.LiveGroup // Live before the step: the device's own blocks
	held      []device.LiveGroup // Live at markLeaves
	after     []device.LiveGroup // Live at markZeroed
	err       error              // from the scope's Run (an OOM)
	inputs    bool               // the inputs were made (no OOM making them)
	hostLeaks []device.LiveGroup // what the Env's host device still held
}

func seedOf(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// makeData draws a case's values, rounded to dt.
func makeData(c opCase, dt dtype.DType) data {
	rng := rand.New(rand.NewPCG(seedOf(c.name), 1))
	var d data
	for _, in := range c.ins {
		n := numel(in.shape)
		v := make([]float64, n)
		var ints []int64
		switch in.kind {
		case grad, constant:
			for i := range v {
				v[i] = 2*rng.Float64() - 1
			}
		case positive:
			for i := range v {
				v[i] = 0.5 + 1.5*rng.Float64()
			}
		case distinct:
			for i, p := range rng.Perm(n) {
				v[i] = float64(p-n/2) / 8
			}
		case index, target:
			ints = make([]int64, n)
			for i := range ints {
				ints[i] = int64(rng.IntN(in.n))
				if in.kind == target && i%3 == 1 {
					ints[i] = -100
				}
			}
		}
		d.vals = append(d.vals, round(v, dt))
		d.ints = append(d.ints, ints)
	}
	d.dy = make([]float64, 4096)
	for i := range d.dy {
		d.dy[i] = round([]float64{2*rng.Float64() - 1}, dt)[0]
	}
	return d
}

func numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// leaves makes the case's inputs on dev: floats in dt, free-standing,
// tagged Parameter.
func leaves(dev *device.Device, c opCase, dt dtype.DType, d data) []*autograd.Tensor {
	xs := make([]*autograd.Tensor, len(c.ins))
	for i, in := range c.ins {
		if in.kind == index || in.kind == target {
			xs[i] = autograd.FromInt64s(dev, in.shape, d.ints[i])
			continue
		}
		x := autograd.New(dev, dt, device.Parameter, in.shape...)
		x.SetFloat64s(d.vals[i])
		xs[i] = x.SetRequiresGrad(in.kind != constant)
	}
	return xs
}

// step runs one forward and backward of c on dev with inputs in dt (auto:
// under autocast of auto), reading the values when read is set.
func step(dev *device.Device, c opCase, dt, auto dtype.DType, d data, read bool) (r result) {

	host := cpu.New(1, device.Options{})
	defer func() { r.hostLeaks = host.Leaks(); host.Close() }()
	r.base, r.before = start(dev)
	defer func() {
		for m := range r.marks {
			r.marks[m] = since(r.marks[m], r.base)
		}
	}()
	var xs []*autograd.Tensor
	if r.err = autograd.Try(func() { xs = leaves(dev, c, dt, d) }); r.err != nil {
		r.err = fmt.Errorf("making the inputs: %w", r.err)
		return r
	}
	r.inputs = true
	r.marks[markLeaves], r.held = dev.Stats(), dev.Live()
	s := autograd.NewScope()
	r.err = s.Run(func() error {
		in := make([]*autograd.Tensor, len(xs))
		for i, x := range xs {
			in[i] = s.Use(x)
		}
		var out *autograd.Tensor
		if auto != 0 {
			s.Autocast(auto, func() { out = c.f(Env{S: s, Host: host}, in) })
		} else {
			out = c.f(Env{S: s, Host: host}, in)
		}
		r.isInt = !out.DType().IsFloat()
		if read {
			r.out = values(out)
		}
		r.marks[markForward] = dev.Stats()
		if !r.isInt {
			dy := s.Zeros(dev, out.DType(), out.Shape()...)
			dy.SetFloat64s(d.dy[:out.Len()])
			if err := out.BackwardWith(dy); err != nil {
				return err
			}
		}
		r.marks[markBackward] = dev.Stats()
		return nil
	})
	r.marks[markReleased] = dev.Stats()
	r.grads = make([][]float64, len(xs))
	for i, x := range xs {
		if g := x.Grad(); g != nil && read {
			r.grads[i] = g.Float64s()
		}
		x.ZeroGrad()
	}
	r.marks[markZeroed], r.after = dev.Stats(), dev.Live()
	for _, x := range xs {
		x.Release()
	}
	r.marks[markDone] = dev.Stats()
	return r
}

// start resets dev's peaks and returns the snapshot that the step's
// counters are counted from (since) and what the device holds already: its
// own long-lived blocks (a cuda device's cuBLAS workspace), which a
// reference device does not have.
func start(dev *device.Device) (device.Stats, []device.LiveGroup) {
	dev.ResetPeak()
	return dev.Stats(), dev.Live()
}

// since returns the counters of s counted from base, taken right after
// ResetPeak: currents and peaks less what base held, totals and counts less
// base's, so that a device that holds blocks of its own or served earlier
// steps compares with a fresh reference device.
func since(s, base device.Stats) device.Stats {
	sub := func(c, b device.Counter) device.Counter {
		c.Current -= b.Current
		c.Peak -= b.Current
		c.Allocated -= b.Allocated
		c.Freed -= b.Freed
		c.Allocs -= b.Allocs
		c.Frees -= b.Frees
		return c
	}
	s.Requested = sub(s.Requested, base.Requested)
	s.Allocated = sub(s.Allocated, base.Allocated)
	s.Reserved = sub(s.Reserved, base.Reserved)
	for t := range s.ByTag {
		s.AtPeak[t] -= base.ByTag[t].Current
		s.ByTag[t] = sub(s.ByTag[t], base.ByTag[t])
	}
	return s
}

func values(t *autograd.Tensor) []float64 {
	if t.DType().IsFloat() {
		return t.Float64s()
	}
	v := t.Int64s()
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return f
}
