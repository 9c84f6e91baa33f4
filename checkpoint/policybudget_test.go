package checkpoint_test

import (
	"errors"
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// budgetGPT is the stack the ModeBudget tests solve for: 6 GPT blocks
// (attention, dropout) on a batch of 2×16 tokens of width 32.
var budgetGPT = nn.GPTConfig{Vocab: 16, Context: 16, Layers: 6, Heads: 2, Width: 32, Dropout: 0.1, Bias: true}

// gptModeStep runs one step of a freshly built budgetGPT stack with modes
// (nil: plain nn.Sequential) and returns its activation peak and every
// parameter's gradient.
func gptModeStep(t *testing.T, modes []checkpoint.Mode) (int64, []float64) {
	t.Helper()
	dev := cpu.New(0, device.Options{})
	b := nn.NewBuilder(dev, dtype.F32, 1)
	gen := autograd.NewGenerator(5)
	var ls []nn.Layer
	for i := range budgetGPT.Layers {
		ls = append(ls, nn.NewGPTBlock(b, "h"+string(rune('0'+i)), budgetGPT, gen))
	}
	m := nn.NewSequential(ls...)
	defer nn.Release(m)
	run := m.Forward
	if modes != nil {
		o := &checkpoint.Offload{Host: cpu.New(100, device.Options{}), Modes: modes}
		run = func(x *autograd.Tensor) *autograd.Tensor { return o.Forward(ls, x) }
	}
	s := autograd.NewScope()
	defer s.Release()
	if err := run(s.Full(dev, dtype.F32, 0.5, 2, 16, 32)).Pow(2).Mean(false).Backward(); err != nil {
		t.Fatal(err)
	}
	var grads []float64
	for _, p := range m.Params() {
		if g := p.T.Grad(); g != nil {
			grads = append(grads, g.Float64s()...)
		}
	}
	return dev.Stats().Tag(device.Activation).Peak, grads
}

// newGPTBudget is a ModeBudget for budgetGPT measured on cpu, the FLOPs
// counted from the shapes: 2·tokens·12·width² for the four Linears,
// 4·batch·T²·width for attention's two products.
func newGPTBudget(t *testing.T, bytes int64) *checkpoint.ModeBudget {
	const tokens, T, d = 2 * 16, 16, 32
	flops := make([]int64, budgetGPT.Layers)
	for i := range flops {
		flops[i] = 2*tokens*12*d*d + 4*2*T*T*d
	}
	return &checkpoint.ModeBudget{Bytes: bytes, FLOPs: flops, Rates: checkpoint.DefaultRates,
		Peak: func(ms []checkpoint.Mode) (int64, error) { p, _ := gptModeStep(t, ms); return p, nil }}
}

// TestModeBudgetMeetsBudgets: at 90%, 60% and 40% of plain's activation
// peak the chosen modes' measured peak is within the budget, the same when
// run again, and the gradients are plain's bit for bit.
func TestModeBudgetMeetsBudgets(t *testing.T) {
	plain, want := gptModeStep(t, nil)
	for _, frac := range []float64{0.9, 0.6, 0.4} {
		budget := int64(frac * float64(plain))
		ds, peak, err := newGPTBudget(t, budget).Solve()
		if err != nil {
			t.Fatalf("%.0f%% of %d B: %v", 100*frac, plain, err)
		}
		again, got := gptModeStep(t, checkpoint.Modes(ds))
		t.Logf("budget %d B (%.0f%% of plain %d B): peak %d B, modes %v", budget, 100*frac, plain, peak, checkpoint.Modes(ds))
		if peak > budget || again != peak {
			t.Errorf("budget %d B: solved peak %d B, rerun %d B; want the same, ≤ the budget", budget, peak, again)
		}
		if len(got) != len(want) {
			t.Fatalf("%d gradient values, plain %d", len(got), len(want))
		}
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("budget %d B modes %v: gradient %d = %v, plain %v", budget, checkpoint.Modes(ds), i, got[i], want[i])
			}
		}
	}
}

// TestModeBudgetTooSmall: a budget under what every layer at its most
// saving mode needs is a *BudgetError naming that smallest budget, which
// then solves.
func TestModeBudgetTooSmall(t *testing.T) {
	_, _, err := newGPTBudget(t, 1024).Solve()
	var be *checkpoint.BudgetError
	if !errors.As(err, &be) || be.Budget != 1024 || be.Smallest <= 1024 {
		t.Fatalf("err %v; want a *BudgetError for 1024 B naming a larger smallest budget", err)
	}
	t.Log(err)
	if _, peak, err := newGPTBudget(t, be.Smallest).Solve(); err != nil || peak > be.Smallest {
		t.Fatalf("the smallest budget %d B: peak %d B, %v", be.Smallest, peak, err)
	}
}

// TestModeBudgetSelectiveFLOPs: a selective layer's estimated extra time
// is its SelectiveFLOPs over the FLOP rate plus the bytes it drops over
// the memory rate; the entries must match the layers. The peak is a
// closed form: each layer holds 500 B kept, 200 B selective, 150 B
// recomputed, 500 B offloaded (offload frees nothing here).
func TestModeBudgetSelectiveFLOPs(t *testing.T) {
	held := map[checkpoint.Mode]int64{checkpoint.Keep: 500, checkpoint.SelectiveRecompute: 200, checkpoint.Recompute: 150, checkpoint.Offloaded: 500}
	peak := func(ms []checkpoint.Mode) (int64, error) {
		var p int64
		for _, m := range ms {
			p += held[m]
		}
		return p, nil
	}
	r := checkpoint.DefaultRates
	mb := &checkpoint.ModeBudget{Bytes: 800, FLOPs: []int64{1e12, 1e12}, SelectiveFLOPs: []int64{3e9, 5e9}, Rates: r, Peak: peak}
	ds, got, err := mb.Solve()
	if err != nil || got > 800 {
		t.Fatalf("peak %d B, %v: want ≤ 800 B", got, err)
	}
	n := 0
	for _, d := range ds {
		if d.Mode != checkpoint.SelectiveRecompute {
			continue
		}
		n++
		if want := float64(mb.SelectiveFLOPs[d.Layer])/r.FLOPS + 300/r.Memory; math.Abs(d.Extra-want) > 1e-15 {
			t.Errorf("layer %d selective: est. extra %g s, want %g s", d.Layer, d.Extra, want)
		}
	}
	if n != 1 {
		t.Errorf("modes %v: want one layer selective (its 3e9 FLOPs cost less than recomputing 1e12)", checkpoint.Modes(ds))
	}
	mb.SelectiveFLOPs = []int64{1}
	if _, _, err := mb.Solve(); err == nil {
		t.Error("one selective FLOPs entry for two layers: want an error")
	}
}
