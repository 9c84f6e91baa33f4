package prune_test

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/prune"
)

// TestImportanceHandBuilt ranks the four filters of a 1×1 convolution
// whose L1 norms and Taylor scores are worked out by hand.
func TestImportanceHandBuilt(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	c := nn.NewConv2d(nn.NewBuilder(dev, dtype.F64, 1), "c", 2, 4, [2]int{1, 1}, autograd.ConvOptions{}, true)
	defer nn.Release(c)
	c.Weight.SetFloat64s([]float64{1, -1, 0.5, 0, -3, 0.25, 0.5, 0})
	l1, err := prune.Importance(c.Weight, prune.L1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{2, 0.5, 3.25, 0.5}; !slices.Equal(l1, want) {
		t.Errorf("L1 importance %v, want %v", l1, want)
	}
	for _, tc := range []struct {
		k    int
		want []int
	}{{1, []int{2}}, {2, []int{0, 2}}, {3, []int{0, 1, 2}}, {4, []int{0, 1, 2, 3}}} {
		// Filters 1 and 3 tie at 0.5: the lower index ranks higher.
		if got := prune.Top(l1, tc.k); !slices.Equal(got, tc.want) {
			t.Errorf("Top(%v, %d) = %v, want %v", l1, tc.k, got, tc.want)
		}
	}
	if got := prune.Top([]float64{math.NaN(), 0, 1}, 2); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("Top with a NaN = %v, want [1 2] (NaN ranks lowest)", got)
	}

	_, err = prune.Importance(c.Weight, prune.Taylor)
	if err == nil || !strings.Contains(err.Error(), "no gradient") || !strings.Contains(err.Error(), "c.weight") {
		t.Errorf("Taylor without a gradient: %v, want an error naming c.weight", err)
	}
	t.Logf("Taylor without a gradient: %v", err)
	g := autograd.FromFloat64s(dev, []int{4, 2, 1, 1}, []float64{0, 0, 4, 0, 0.1, 1, 1, 1})
	c.Weight.SetGrad(g)
	tay, err := prune.Importance(c.Weight, prune.Taylor)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0, 2, 0.55, 0.5}
	for i := range want {
		if math.Abs(tay[i]-want[i]) > 1e-15 {
			t.Errorf("Taylor importance %v, want %v", tay, want)
			break
		}
	}
	if got := prune.Top(tay, 2); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("Top(Taylor, 2) = %v, want [1 2]", got)
	}
	if _, err := prune.Importance(c.Weight, prune.Criterion(9)); err == nil {
		t.Error("unknown criterion: no error")
	}
}

// TestResNetRemovesLowestL1 gives the first block's conv1 filters chosen
// L1 norms and checks that the lowest go.
func TestResNetRemovesLowestL1(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	r, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F64, 1), "", nn.ResNetConfig{InChannels: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(r)
	conv := r.Stages[0][0].(*nn.BasicBlock).Conv1 // (16, 16, 3, 3)
	// Filter c has every weight ±norm[c]/144: L1 norm norm[c].
	norm := []float64{5, 1, 9, 3, 14, 2, 7, 16, 4, 11, 6, 13, 8, 15, 10, 12}
	v := make([]float64, conv.Weight.Len())
	for i := range v {
		c := i / 144
		v[i] = norm[c] / 144 * float64(1-2*(i%2))
	}
	conv.Weight.SetFloat64s(v)
	rep, err := prune.ResNet(r, 0.25, prune.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The four lowest norms, 1 … 4, are channels 1, 5, 3, 8.
	want := []int{0, 2, 4, 6, 7, 9, 10, 11, 12, 13, 14, 15}
	if l := rep.Layers[0]; l.Name != "layer1.0.conv1" || !slices.Equal(l.Kept, want) {
		t.Errorf("%s kept %v, want %v", l.Name, l.Kept, want)
	}
	got := conv.Weight.Float64s()
	for i, c := range want {
		if w := got[i*144]; math.Abs(w-norm[c]/144) > 0 {
			t.Errorf("new filter %d starts with %g, want old filter %d's %g", i, w, c, norm[c]/144)
		}
	}
}

// TestResNetTaylor accumulates gradients of two batches and checks that
// Taylor ranking keeps the channels with the largest Σ|w·∂L/∂w|, computed
// here independently.
func TestResNetTaylor(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	r, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F64, 1), "", nn.ResNetConfig{InChannels: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(r)
	randomize(r, 4)
	// Without gradients: an error, and the model unchanged.
	before := paramTensors(r)
	if _, err := prune.ResNet(r, 0.5, prune.Options{By: prune.Taylor}); err == nil || !strings.Contains(err.Error(), "no gradient") {
		t.Errorf("Taylor without gradients: %v", err)
	} else {
		t.Logf("Taylor without gradients: %v", err)
	}
	if !sameTensors(before, paramTensors(r)) {
		t.Error("a failed prune changed the model's tensors")
	}
	for seed := range uint64(2) {
		if _, err := trainStep(dev, r, 10+seed); err != nil {
			t.Fatal(err)
		}
	}
	var want [][]int
	for _, g := range groups(t, r) {
		w, gr := g.conv.Weight.Float64s(), g.conv.Weight.Grad().Float64s()
		n := g.conv.Out
		per := len(w) / n
		type ch struct {
			i int
			s float64
		}
		cs := make([]ch, n)
		for c := range n {
			cs[c].i = c
			for j := c * per; j < (c+1)*per; j++ {
				cs[c].s += math.Abs(w[j] * gr[j])
			}
		}
		sort.SliceStable(cs, func(a, b int) bool { return cs[a].s > cs[b].s })
		var keep []int
		for _, c := range cs[:prune.KeepCount(n, 0.5)] {
			keep = append(keep, c.i)
		}
		slices.Sort(keep)
		want = append(want, keep)
	}
	rep, err := prune.ResNet(r, 0.5, prune.Options{By: prune.Taylor})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range rep.Layers {
		if !slices.Equal(l.Kept, want[i]) {
			t.Errorf("%s kept %v, want %v", l.Name, l.Kept, want[i])
		}
	}
	for _, p := range r.Params() {
		if p.T.Grad() != nil {
			t.Errorf("%s has a gradient after pruning", p.Name)
		}
	}
}

// sameTensors reports whether two name → tensor maps hold the same live
// tensors.
func sameTensors(a, b map[string]*autograd.Tensor) bool {
	if len(a) != len(b) {
		return false
	}
	for n, t := range a {
		if b[n] != t || t.Released() {
			return false
		}
	}
	return true
}

// TestBadArguments checks that fractions outside [0, 1), an unknown
// criterion and nil models give errors naming the value, and change
// nothing.
func TestBadArguments(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	b := nn.NewBuilder(dev, dtype.F32, 1)
	r, err := nn.SmallResNet(b, "net", nn.ResNetConfig{InChannels: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(r)
	g, err := nn.NewGPT(b, "gpt", nn.GPTConfig{Vocab: 16, Context: 8, Layers: 1, Heads: 2, Width: 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(g)
	rt, gt, held := paramTensors(r), paramTensors(g), paramBytes(dev)
	check := func(what string, err error, want ...string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", what)
			return
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", what, err, w)
			}
		}
		t.Logf("%s: %v", what, err)
	}
	for _, f := range []float64{-0.1, 1, 1.5, math.NaN(), math.Inf(1)} {
		_, err := prune.ResNet(r, f, prune.Options{})
		check("ResNet fraction", err, "prune.ResNet net", fmt.Sprintf("fraction %g", f), "want 0 ≤ fraction < 1")
		_, err = prune.GPT(g, f, 0, prune.Options{})
		check("GPT heads", err, "prune.GPT gpt", "heads fraction")
		_, err = prune.GPT(g, 0, f, prune.Options{})
		check("GPT mlp", err, "mlp fraction")
	}
	_, err = prune.ResNet(r, 0.3, prune.Options{By: prune.Criterion(5)})
	check("criterion", err, "criterion 5")
	_, err = prune.GPT(g, 0.5, 0.5, prune.Options{Tokens: 9})
	check("tokens", err, "9 tokens", "context 8")
	_, err = prune.ResNet(nil, 0.3, prune.Options{})
	check("nil ResNet", err, "nil model")
	_, err = prune.GPT(nil, 0.3, 0.3, prune.Options{})
	check("nil GPT", err, "nil model")
	if !sameTensors(rt, paramTensors(r)) || !sameTensors(gt, paramTensors(g)) || paramBytes(dev) != held {
		t.Error("a failed prune changed a model")
	}
	if _, err := prune.ParseCriterion("l2"); err == nil {
		t.Error(`ParseCriterion("l2"): no error`)
	}
	for _, c := range []prune.Criterion{prune.L1, prune.Taylor} {
		if got, err := prune.ParseCriterion(c.String()); got != c || err != nil {
			t.Errorf("ParseCriterion(%q) = %v, %v", c.String(), got, err)
		}
	}
}

// TestKeepCount checks the rounding of KeepCount.
func TestKeepCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		f    float64
		want int
	}{{16, 0, 16}, {16, 0.3, 11}, {16, 0.5, 8}, {64, 0.3, 45}, {10, 0.25, 7}, {10, 0.35, 6}, {1, 0.9, 1}, {3, 0.99, 1}, {4, 0.5, 2}} {
		if got := prune.KeepCount(tc.n, tc.f); got != tc.want {
			t.Errorf("KeepCount(%d, %g) = %d, want %d", tc.n, tc.f, got, tc.want)
		}
	}
}

// TestSaveLoadPruned saves a pruned model and loads it into another model
// built with another seed and pruned with the same fraction: the values
// and the outputs match bit for bit. An unpruned model refuses the file.
func TestSaveLoadPruned(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	build := func(seed uint64) *nn.ResNet {
		r, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, seed), "", nn.ResNetConfig{InChannels: 1})
		if err != nil {
			t.Fatal(err)
		}
		randomize(r, seed)
		return r
	}
	a, b, c := build(1), build(2), build(3)
	defer nn.Release(a)
	defer nn.Release(b)
	defer nn.Release(c)
	for _, m := range []*nn.ResNet{a, b} {
		if _, err := prune.ResNet(m, 0.3, prune.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "pruned.safetensors")
	if err := nn.Save(path, a, map[string]string{"prune": "0.3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := nn.Load(path, b); err != nil {
		t.Fatal(err)
	}
	va, vb := values(a), values(b)
	for i := range va {
		if !slices.Equal(va[i], vb[i]) {
			t.Errorf("param %d differs after loading", i)
		}
	}
	shape := []int{2, 1, 28, 28}
	x := randSlice(9, 2*28*28)
	if ya, yb := forward(dev, a, dtype.F32, shape, x), forward(dev, b, dtype.F32, shape, x); !slices.Equal(ya, yb) {
		t.Errorf("outputs differ after loading: %v vs %v", ya, yb)
	}
	_, err := nn.Load(path, c)
	if err == nil || !strings.Contains(err.Error(), "layer1.0.conv1.weight") {
		t.Errorf("loading a pruned file into an unpruned model: %v, want an error naming the mismatched tensors", err)
	}
	t.Logf("unpruned model: %.300s", err)
}

// TestFineTune checks the loop: every step runs once, in order, and the
// first error stops it.
func TestFineTune(t *testing.T) {
	var seen []int
	losses, err := prune.FineTune(3, func(i int) (float64, error) {
		seen = append(seen, i)
		return float64(10 - i), nil
	})
	if err != nil || !slices.Equal(seen, []int{0, 1, 2}) || !slices.Equal(losses, []float64{10, 9, 8}) {
		t.Errorf("FineTune(3) ran %v, losses %v, error %v", seen, losses, err)
	}
	boom := errors.New("boom")
	losses, err = prune.FineTune(5, func(i int) (float64, error) {
		if i == 2 {
			return 0, boom
		}
		return 1, nil
	})
	if !errors.Is(err, boom) || len(losses) != 2 || !strings.Contains(err.Error(), "step 2") {
		t.Errorf("FineTune with a failing step: losses %v, error %v", losses, err)
	}
	if _, err := prune.FineTune(-1, func(int) (float64, error) { return 0, nil }); err == nil {
		t.Error("FineTune(-1): no error")
	}
}
