package optim_test

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/optim"
)

// masterRun is the regression model twice: 16-bit parameters under an
// 8-bit AdamW with master weights, and F32 parameters equal to the
// masters under an 8-bit AdamW without, fed the same (widened) gradients.
type masterRun struct {
	g              *regression
	w, b, w32, b32 *autograd.Tensor
	o, ref         *optim.Adam8bit
}

func newMasterRun(t *testing.T, dev *device.Device, dt dtype.DType, q optim.Quant8Config) *masterRun {
	t.Helper()
	r := &masterRun{g: newRegression(7, 80, 75, 8)}
	r.w = autograd.Param(dev, dt, "w", r.g.out, r.g.in)
	r.b = autograd.Param(dev, dt, "b", r.g.out)
	r.w32, r.b32 = regressionParams(dev, r.g)
	rnd := rand.New(rand.NewSource(8))
	for _, p := range []struct{ t, t32 *autograd.Tensor }{{r.w, r.w32}, {r.b, r.b32}} {
		v := make([]float64, p.t.Len())
		for i := range v {
			v[i] = 0.05 * rnd.NormFloat64()
		}
		p.t.SetFloat64s(v)
		p.t32.SetFloat64s(p.t.Float64s()) // the 16-bit values, exactly
	}
	var err error
	c := optim.AdamConfig{LR: 1e-2, MasterWeights: true}
	if r.o, err = optim.NewAdamW8bit(params(r.w, r.b), c, q); err != nil {
		t.Fatal(err)
	}
	c.MasterWeights = false
	if r.ref, err = optim.NewAdamW8bit(params(r.w32, r.b32), c, q); err != nil {
		t.Fatal(err)
	}
	return r
}

// step computes the gradients at the 16-bit parameters, gives the widened
// 16-bit gradients to the F32 run, and steps both.
func (r *masterRun) step(t *testing.T) {
	t.Helper()
	_, gw, gb := r.g.grads(r.w.Float64s(), r.b.Float64s())
	setGrad(t, r.w, gw)
	setGrad(t, r.b, gb)
	setGrad(t, r.w32, r.w.Grad().Float64s())
	setGrad(t, r.b32, r.b.Grad().Float64s())
	for _, o := range []*optim.Adam8bit{r.o, r.ref} {
		if err := o.Step(); err != nil {
			t.Fatal(err)
		}
		o.ZeroGrad()
	}
}

// TestAdamW8bitMasterEqualsF32 checks, for bf16 and f16 parameters, that
// after each step the masters are bit for bit the F32 8-bit run's
// parameters and the 16-bit parameters are those rounded to their dtype.
func TestAdamW8bitMasterEqualsF32(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
		r := newMasterRun(t, cpu.New(0, device.Options{}), dt, optim.Quant8Config{Block: 1000})
		for i := range 5 {
			r.step(t)
			st := r.o.State()
			for _, p := range []struct {
				name    string
				t, want *autograd.Tensor
			}{{"w", r.w, r.w32}, {"b", r.b, r.b32}} {
				m := st.Tensors["master."+p.name]
				if m == nil {
					t.Fatalf("%s step %d: no master.%s in the state", dt, i, p.name)
				}
				same(t, dt.String()+" master."+p.name, m.Float64s(), p.want.Float64s())
				same(t, dt.String()+" "+p.name, p.t.Float64s(), round16(dt, p.want.Float64s()))
			}
		}
		if got := r.o.State().Scalars["master_weights"]; got != 1 {
			t.Errorf("%s: state scalar master_weights = %v, want 1", dt, got)
		}
	}
}

// TestAdamW8bitMasterBytes checks the optimizer bytes with master weights
// against the closed form 4n + 2n + 8·ceil(n/B) for the quantised w and
// 12 per element (master, m, v) for the small b, on cpu and on meta.
func TestAdamW8bitMasterBytes(t *testing.T) {
	const B = 1000
	for _, dev := range []*device.Device{cpu.New(0, device.Options{}), meta.New(0, device.Options{})} {
		r := newMasterRun(t, dev, dtype.BF16, optim.Quant8Config{Block: B})
		before := dev.Stats().ByTag[device.Optimizer].Current
		setGrad(t, r.w, make([]float64, r.w.Len()))
		setGrad(t, r.b, make([]float64, r.b.Len()))
		if err := r.o.Step(); err != nil {
			t.Fatal(err)
		}
		n, nb := int64(r.w.Len()), int64(r.b.Len())
		want := 4*n + 2*n + 8*((n+B-1)/B) + 12*nb
		if got := dev.Stats().ByTag[device.Optimizer].Current - before; got != want {
			t.Errorf("%s: optimizer bytes %d, want 4·%d + 2·%d + 8·ceil(%d/%d) + 12·%d = %d", dev, got, n, n, n, B, nb, want)
		}
		if got := r.o.StateBytes(); got != want {
			t.Errorf("%s: StateBytes %d, want %d", dev, got, want)
		}
		r.o.Release()
	}
}

// TestAdamW8bitMasterResume saves a master-weight run after 3 steps, loads
// it into a fresh optimizer over 16-bit parameters reset to that point, and
// checks that 3 more steps agree bit for bit with the uninterrupted run;
// an optimizer without master weights refuses the state.
func TestAdamW8bitMasterResume(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	q := optim.Quant8Config{Block: 1000}
	r := newMasterRun(t, dev, dtype.BF16, q)
	for range 3 {
		r.step(t)
	}
	saved := optim.State{Tensors: map[string]*autograd.Tensor{}, Scalars: r.o.State().Scalars}
	for k, s := range r.o.State().Tensors {
		cp := autograd.New(dev, s.DType(), device.Other, s.Shape()...)
		cp.CopyFrom(s)
		saved.Tensors[k] = cp
	}
	w3, b3 := r.w.Float64s(), r.b.Float64s()
	r2 := newMasterRun(t, dev, dtype.BF16, q)
	r2.w.SetFloat64s(w3)
	r2.b.SetFloat64s(b3)
	if err := r2.o.Load(saved); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r.step(t)
		r2.step(t)
	}
	same(t, "w", r2.w.Float64s(), r.w.Float64s())
	same(t, "b", r2.b.Float64s(), r.b.Float64s())
	same(t, "master.w", r2.o.State().Tensors["master.w"].Float64s(), r.o.State().Tensors["master.w"].Float64s())
	if err := r2.ref.Load(saved); err == nil {
		t.Error("a master-weight state loaded into an optimizer without master weights")
	} else {
		t.Logf("rejected: %v", err)
	}
}

// round16 rounds F32 values to the 16-bit dt on the host (dtype's
// round-to-nearest-even), as float64.
func round16(dt dtype.DType, v []float64) []float64 {
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	raw := make([]byte, 2*len(v))
	dtype.FromF32(dt, raw, f)
	dtype.ToF32(f, dt, raw)
	out := make([]float64, len(v))
	for i, x := range f {
		out[i] = float64(x)
	}
	return out
}

// TestAdamW8bitMasterDTypes: MasterWeights over an F32 parameter, or a
// 16-bit parameter without it, is refused by the constructor, naming the
// parameter and its dtype.
func TestAdamW8bitMasterDTypes(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	for _, c := range []struct {
		dt     dtype.DType
		master bool
	}{{dtype.F32, true}, {dtype.BF16, false}} {
		w := autograd.Param(dev, c.dt, "w", 8192)
		_, err := optim.NewAdamW8bit(params(w), optim.AdamConfig{MasterWeights: c.master}, optim.Quant8Config{})
		if err == nil || !strings.Contains(err.Error(), `"w"`) || !strings.Contains(err.Error(), c.dt.String()) {
			t.Errorf("%s with MasterWeights %v: err %v, want one naming \"w\" and %s", c.dt, c.master, err, c.dt)
		} else {
			t.Logf("rejected: %v", err)
		}
		w.Release()
	}
}
