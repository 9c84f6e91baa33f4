package optim_test

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/optim"
)

// allState returns every parameter and state tensor of o (by name) and its
// scalars, as float64 values.
func allState(o optim.Optimizer) []float64 {
	var v []float64
	for _, p := range o.Params() {
		v = append(v, p.T.Float64s()...)
	}
	st := o.State()
	names := make([]string, 0, len(st.Tensors))
	for n := range st.Tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v = append(v, st.Tensors[n].Float64s()...)
	}
	names = names[:0]
	for n := range st.Scalars {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v = append(v, st.Scalars[n])
	}
	return v
}

// adam8Run runs 3 steps of an 8-bit AdamW over a quantised parameter (200
// elements, blocks of 64) and a small one, through Step or StepParam
// (undoing and redoing the first StepParam of each step once), and
// returns the state after each step; with a 16-bit dt, with master weights.
func adam8Run(t *testing.T, perParam bool, dt dtype.DType) [][]float64 {
	dev, host := cpu.New(0, device.Options{}), cpu.New(100, device.Options{})
	rng := rand.New(rand.NewPCG(4, 4))
	big := make([]float64, 200)
	for i := range big {
		big[i] = rng.NormFloat64()
	}
	w := param(dev, dt, "w", big...)
	b := param(dev, dt, "b", 0.1, -0.2, 0.3)
	c := optim.AdamConfig{LR: 0.01, MasterWeights: dt.IsLowPrecision()}
	o, err := optim.NewAdamW8bit(params(w, b), c, optim.Quant8Config{MinElems: 16, Block: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Release()
	var out [][]float64
	for range 3 {
		for _, p := range []*autograd.Tensor{w, b} {
			g := make([]float64, p.Len())
			for i := range g {
				g[i] = rng.NormFloat64()
			}
			setGrad(t, p, g)
		}
		if perParam {
			before := allState(o)
			undo, err := o.StepParam(w, host)
			if err != nil {
				t.Fatal(err)
			}
			undo.Restore()
			same(t, "8-bit state after undo", allState(o), before)
			for _, p := range []*autograd.Tensor{b, w} {
				if u, err := o.StepParam(p, host); err != nil {
					t.Fatal(err)
				} else {
					u.Release()
				}
				p.ZeroGrad()
			}
		}
		if err := o.Step(); err != nil {
			t.Fatal(err)
		}
		o.ZeroGrad()
		out = append(out, allState(o))
	}
	return out
}

// TestAdam8bitStepParamEqualsStep: StepParam gives the 8-bit AdamW's
// Step bit for bit, and its undo puts the codes, absmax arrays, master
// copy (BF16 with master weights), parameter and counts back (the first
// time: no state at all).
func TestAdam8bitStepParamEqualsStep(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		want, got := adam8Run(t, false, dt), adam8Run(t, true, dt)
		for i := range want {
			if len(got[i]) != len(want[i]) {
				t.Fatalf("%s step %d: %d state values, want %d", dt, i, len(got[i]), len(want[i]))
			}
			same(t, dt.String()+" 8-bit AdamW via StepParam", got[i], want[i])
		}
	}
}

// TestStepParamMasterWeights: with BF16 parameters and F32 master
// weights, StepParam (undone once, then redone) gives Step's parameters,
// masters and moments bit for bit.
func TestStepParamMasterWeights(t *testing.T) {
	run := func(perParam bool) [][]float64 {
		dev, host := cpu.New(0, device.Options{}), cpu.New(100, device.Options{})
		w := param(dev, dtype.BF16, "w", 0.5, -1.25, 2, 0.75)
		o, err := optim.NewAdamW(params(w), optim.AdamConfig{LR: 0.01, MasterWeights: true})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Release()
		var out [][]float64
		for i := range 3 {
			setGrad(t, w, []float64{0.1 * float64(i+1), -0.2, 0.3, 1})
			if perParam {
				before := allState(o)
				undo, err := o.StepParam(w, host)
				if err != nil {
					t.Fatal(err)
				}
				undo.Restore()
				same(t, "master weights after undo", allState(o), before)
				if u, err := o.StepParam(w, host); err != nil {
					t.Fatal(err)
				} else {
					u.Release()
				}
				w.ZeroGrad()
			}
			if err := o.Step(); err != nil {
				t.Fatal(err)
			}
			o.ZeroGrad()
			out = append(out, allState(o))
		}
		return out
	}
	want, got := run(false), run(true)
	for i := range want {
		same(t, "bf16 with master weights via StepParam", got[i], want[i])
	}
}
