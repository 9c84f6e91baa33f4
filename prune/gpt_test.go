package prune_test

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/prune"
)

// uniqueBlocks returns g's blocks, a shared one once.
func uniqueBlocks(g *nn.GPT) []*nn.GPTBlock {
	var out []*nn.GPTBlock
	for _, k := range g.Blocks {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// logits runs g on seeded tokens (B, T) without a graph and returns the
// logits' values.
func logits(dev *device.Device, g *nn.GPT, seed uint64, B, T int) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	idx := make([]int64, B*T)
	for i := range idx {
		idx[i] = int64(rng.IntN(g.Config.Vocab))
	}
	s := autograd.NewScope()
	defer s.Release()
	var out []float64
	s.NoGrad(func() { out = g.Forward(s.FromInt64s(dev, []int{B, T}, idx)).Float64s() })
	return out
}

var gptConfigs = []struct {
	name string
	cfg  nn.GPTConfig
}{
	{"bias", nn.GPTConfig{Vocab: 32, Context: 8, Layers: 2, Heads: 4, Width: 16, Bias: true}},
	{"shared, tied, no bias", nn.GPTConfig{Vocab: 32, Context: 8, Layers: 3, Heads: 6, Width: 24, TieEmbeddings: true, ShareLayers: true}},
}

// TestGPTZeroedUnitsAreExact zeroes the q, k and v rows (and biases) of
// the heads pruning will remove — such a head attends uniformly to zero
// values and outputs 0 — and the c_fc rows and biases of the hidden units
// it will remove (GELU(0) = 0), and checks that the pruned model computes
// the same logits.
func TestGPTZeroedUnitsAreExact(t *testing.T) {
	for _, c := range gptConfigs {
		for _, dt := range []dtype.DType{dtype.F64, dtype.F32} {
			t.Run(c.name+" "+dt.String(), func(t *testing.T) {
				const heads, mlp = 0.5, 0.25
				dev := cpu.New(0, device.Options{})
				g, err := nn.NewGPT(nn.NewBuilder(dev, dt, 1), "gpt", c.cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer nn.Release(g)
				randomize(g, 6)
				rng := rand.New(rand.NewPCG(7, 8))
				H, C := c.cfg.Heads, c.cfg.Width
				D := C / H
				var want [][]int
				for _, k := range uniqueBlocks(g) {
					drop := pick(rng, H, H-prune.KeepCount(H, heads))
					var rows []int
					for part := range 3 {
						for _, h := range drop {
							for d := range D {
								rows = append(rows, part*C+h*D+d)
							}
						}
					}
					zeroRows(k.Attn.Attn.Weight, 0, rows)
					zeroRows(k.Attn.Attn.Bias, 0, rows)
					want = append(want, complement(H, drop))
					n := k.MLP.Hidden
					drop = pick(rng, n, n-prune.KeepCount(n, mlp))
					zeroRows(k.MLP.FC.Weight, 0, drop)
					zeroRows(k.MLP.FC.Bias, 0, drop)
					want = append(want, complement(n, drop))
				}
				before := logits(dev, g, 3, 2, 8)
				rep, err := prune.GPT(g, heads, mlp, prune.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if len(rep.Layers) != len(want) {
					t.Fatalf("%d layers reported, want %d", len(rep.Layers), len(want))
				}
				for i, l := range rep.Layers {
					if !slices.Equal(l.Kept, want[i]) {
						t.Errorf("%s: kept %v %s, want the non-zero ones %v", l.Name, l.Kept, l.Unit, want[i])
					}
				}
				after := logits(dev, g, 3, 2, 8)
				d := maxRelDiff(after, before)
				tol := 1e-13
				if dt == dtype.F32 {
					tol = 1e-6
				}
				t.Logf("parameters %d → %d, FLOPs %d → %d; max relative difference %.3g", rep.ParamsBefore, rep.ParamsAfter, rep.FLOPsBefore, rep.FLOPsAfter, d)
				if d > tol {
					t.Errorf("pruned logits differ by %.3g (relative), want ≤ %g", d, tol)
				}
			})
		}
	}
}

// gptCount is the trainable parameter count of a GPT whose blocks keep k
// heads of width D and m hidden units, from nn's layer formulas.
func gptCount(c nn.GPTConfig, k, m int) int64 {
	C, D := c.Width, c.Width/c.Heads
	bias := 0
	if c.Bias {
		bias = 1
	}
	ln := C + bias*C
	block := ln + C*3*k*D + bias*3*k*D + k*D*C + bias*C + ln + C*m + bias*m + m*C + bias*C
	layers := c.Layers
	if c.ShareLayers {
		layers = 1
	}
	n := c.Vocab*C + c.Context*C + layers*block + ln
	if !c.TieEmbeddings {
		n += c.Vocab * C
	}
	return int64(n)
}

// gptFLOPs is a GPT's forward FLOPs on T tokens with k heads of width D
// and m hidden units per layer.
func gptFLOPs(c nn.GPTConfig, T, k, m int) int64 {
	C, D := c.Width, c.Width/c.Heads
	layer := 2*T*(C*3*k*D+k*D*C+C*m+m*C) + 4*T*T*k*D
	return int64(c.Layers*layer + 2*T*C*c.Vocab)
}

// TestGPTClosedForm checks counts, the allocator's bytes and FLOPs
// against closed forms, and runs forward and backward on the pruned
// model; GPT-2 small is pruned on the meta device.
func TestGPTClosedForm(t *testing.T) {
	gpt2 := nn.GPTConfig{Vocab: 50257, Context: 1024, Layers: 12, Heads: 12, Width: 768, Bias: true, TieEmbeddings: true}
	cases := append(gptConfigs, struct {
		name string
		cfg  nn.GPTConfig
	}{"gpt2 on meta", gpt2})
	for _, c := range cases {
		for _, f := range [][2]float64{{0.5, 0.3}, {0.25, 0.5}} {
			var dev *device.Device
			if c.cfg == gpt2 {
				dev = meta.New(0, device.Options{})
			} else {
				dev = cpu.New(0, device.Options{})
			}
			g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "", c.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			T := min(c.cfg.Context, 64)
			rep, err := prune.GPT(g, f[0], f[1], prune.Options{Tokens: T})
			if err != nil {
				t.Fatal(err)
			}
			H, hid := c.cfg.Heads, 4*c.cfg.Width
			k, m := prune.KeepCount(H, f[0]), prune.KeepCount(hid, f[1])
			if want := gptCount(c.cfg, k, m); rep.ParamsBefore != gptCount(c.cfg, H, hid) || rep.ParamsAfter != want {
				t.Errorf("%s at %v: parameters %d → %d, want %d → %d", c.name, f, rep.ParamsBefore, rep.ParamsAfter, gptCount(c.cfg, H, hid), want)
			}
			if rep.BytesAfter != 4*rep.ParamsAfter || paramBytes(dev) != rep.BytesAfter {
				t.Errorf("%s at %v: bytes after %d, allocator %d, want %d", c.name, f, rep.BytesAfter, paramBytes(dev), 4*rep.ParamsAfter)
			}
			if rep.FLOPsBefore != gptFLOPs(c.cfg, T, H, hid) || rep.FLOPsAfter != gptFLOPs(c.cfg, T, k, m) {
				t.Errorf("%s at %v: FLOPs %d → %d, want %d → %d", c.name, f, rep.FLOPsBefore, rep.FLOPsAfter, gptFLOPs(c.cfg, T, H, hid), gptFLOPs(c.cfg, T, k, m))
			}
			for _, blk := range g.Blocks {
				if a := blk.Attn; a.Heads != k || a.Attn.Out != 3*k*(c.cfg.Width/H) || a.Proj.In != k*(c.cfg.Width/H) || blk.MLP.Hidden != m {
					t.Errorf("%s at %v: sizes heads %d, c_attn out %d, c_proj in %d, hidden %d", c.name, f, a.Heads, a.Attn.Out, a.Proj.In, blk.MLP.Hidden)
				}
			}
			// Forward and backward on the pruned shapes.
			s := autograd.NewScope()
			err = autograd.Try(func() {
				idx := s.Zeros(dev, dtype.I64, 2, T)
				out := g.Forward(idx)
				if !slices.Equal(out.Shape(), []int{2, T, c.cfg.Vocab}) {
					t.Errorf("%s at %v: logits %v", c.name, f, out.Shape())
				}
				loss := autograd.CrossEntropy(out.Reshape(2*T, c.cfg.Vocab), s.Zeros(dev, dtype.I64, 2*T), autograd.CEOptions{})
				if err := loss.Backward(); err != nil {
					panic(err)
				}
			})
			s.Release()
			if err != nil {
				t.Errorf("%s at %v: %v", c.name, f, err)
			}
			for _, p := range nn.Trainable(g) {
				if gr := p.T.Grad(); gr == nil || !slices.Equal(gr.Shape(), p.T.Shape()) {
					t.Errorf("%s at %v: %s %v has gradient %v", c.name, f, p.Name, p.T.Shape(), gr)
					break
				}
			}
			t.Logf("%s, heads %g, mlp %g:\n%s", c.name, f[0], f[1], rep.Summary())
			nn.Release(g)
		}
	}
}

// TestGPTSaveLoad saves a pruned GPT and loads it into another pruned
// alike: same logits.
func TestGPTSaveLoad(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	cfg := gptConfigs[0].cfg
	build := func(seed uint64) *nn.GPT {
		g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, seed), "", cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := prune.GPT(g, 0.5, 0.5, prune.Options{}); err != nil {
			t.Fatal(err)
		}
		return g
	}
	a, b := build(1), build(2)
	defer nn.Release(a)
	defer nn.Release(b)
	path := filepath.Join(t.TempDir(), "gpt.safetensors")
	if err := nn.Save(path, a, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := nn.Load(path, b); err != nil {
		t.Fatal(err)
	}
	if la, lb := logits(dev, a, 1, 2, 8), logits(dev, b, 1, 2, 8); !slices.Equal(la, lb) {
		t.Error("logits differ after loading")
	}
}

// TestGPTTaylor accumulates gradients of one batch and checks that Taylor
// ranking keeps the heads and hidden units with the largest Σ|w·∂L/∂w|
// over their c_attn (q, k, v) and c_fc rows, computed here independently.
func TestGPTTaylor(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	cfg := gptConfigs[0].cfg
	g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F64, 1), "", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(g)
	randomize(g, 2)
	s := autograd.NewScope()
	rng := rand.New(rand.NewPCG(5, 5))
	idx, tgt := make([]int64, 16), make([]int64, 16)
	for i := range idx {
		idx[i], tgt[i] = int64(rng.IntN(cfg.Vocab)), int64(rng.IntN(cfg.Vocab))
	}
	out := g.Forward(s.FromInt64s(dev, []int{2, 8}, idx))
	loss := autograd.CrossEntropy(out.Reshape(16, cfg.Vocab), s.FromInt64s(dev, []int{16}, tgt), autograd.CEOptions{})
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	s.Release()
	// |w·g| summed over the rows of each unit.
	unitScores := func(w *autograd.Tensor, units int, rowsOf func(u int) []int) []float64 {
		wv, gv := w.Float64s(), w.Grad().Float64s()
		per := w.Len() / w.Dim(0)
		out := make([]float64, units)
		for u := range units {
			for _, r := range rowsOf(u) {
				for j := r * per; j < (r+1)*per; j++ {
					out[u] += abs(wv[j] * gv[j])
				}
			}
		}
		return out
	}
	topK := func(s []float64, k int) []int {
		idx := make([]int, len(s))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			switch {
			case s[a] > s[b]:
				return -1
			case s[a] < s[b]:
				return 1
			}
			return 0
		})
		keep := slices.Clone(idx[:k])
		slices.Sort(keep)
		return keep
	}
	H, C := cfg.Heads, cfg.Width
	D := C / H
	var want [][]int
	for _, k := range g.Blocks {
		hs := unitScores(k.Attn.Attn.Weight, H, func(h int) []int {
			var rows []int
			for part := range 3 {
				for d := range D {
					rows = append(rows, part*C+h*D+d)
				}
			}
			return rows
		})
		ms := unitScores(k.MLP.FC.Weight, 4*C, func(u int) []int { return []int{u} })
		want = append(want, topK(hs, prune.KeepCount(H, 0.5)), topK(ms, prune.KeepCount(4*C, 0.5)))
	}
	rep, err := prune.GPT(g, 0.5, 0.5, prune.Options{By: prune.Taylor})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range rep.Layers {
		if !slices.Equal(l.Kept, want[i]) {
			t.Errorf("%s kept %s %v, want %v", l.Name, l.Unit, l.Kept, want[i])
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
