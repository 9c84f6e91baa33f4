package quant_test

import (
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/quant"
)

// tokens yields n batches of random token indices (B, T) made in scopes
// that it releases after each.
func tokens(dev *device.Device, seed uint64, n, B, T, vocab int) iter.Seq[*autograd.Tensor] {
	return func(yield func(*autograd.Tensor) bool) {
		rng := rand.New(rand.NewPCG(seed, 4))
		for range n {
			s := autograd.NewScope()
			ok := yield(s.FromInt64s(dev, []int{B, T}, randTokens(rng, B*T, vocab)))
			s.Release()
			if !ok {
				return
			}
		}
	}
}

func randTokens(rng *rand.Rand, n, vocab int) []int64 {
	idx := make([]int64, n)
	for i := range idx {
		idx[i] = int64(rng.IntN(vocab))
	}
	return idx
}

// logits runs m on idx (B, T) in a NoGrad scope.
func logits(dev *device.Device, m nn.Layer, B, T int, idx []int64) []float32 {
	s := autograd.NewScope()
	defer s.Release()
	var out []float32
	s.NoGrad(func() { out = m.Forward(s.FromInt64s(dev, []int{B, T}, idx)).Float32s() })
	return out
}

var gptConfigs = []struct {
	name string
	cfg  nn.GPTConfig
}{
	{"tied", nn.GPTConfig{Vocab: 23, Context: 8, Layers: 2, Heads: 2, Width: 16, Bias: true, TieEmbeddings: true}},
	{"untied", nn.GPTConfig{Vocab: 17, Context: 6, Layers: 1, Heads: 4, Width: 32}},
	{"shared", nn.GPTConfig{Vocab: 11, Context: 5, Layers: 3, Heads: 1, Width: 8, Bias: true, ShareLayers: true}},
}

// gptBytes returns the exact parameter bytes of g's int8 form: one byte
// per Linear weight and 4 per output feature for its scale (and its bias),
// F32 everything else; 4 per Linear more with static activations.
func gptBytes(g *nn.GPT, static bool) int64 {
	var n int64
	for _, p := range g.Params() {
		t := p.T
		switch {
		case t.Rank() == 2 && p.Name != "gpt.transformer.wte.weight" && p.Name != "gpt.transformer.wpe.weight":
			n += int64(t.Len()) + 4*int64(t.Dim(0))
			if static {
				n += 4
			}
		default:
			n += 4 * int64(t.Len())
		}
	}
	return n
}

// TestConvertGPT converts tiny GPTs (tied and untied heads, shared
// layers), dynamic and static, on cpu and compares the logits with the
// float model's, and on meta checks the parameter bytes against the closed
// form and that cpu and meta allocate the same.
func TestConvertGPT(t *testing.T) {
	for _, c := range gptConfigs {
		byDev := map[string]int64{}
		for _, dev := range []*device.Device{cpu.New(0, device.Options{}), meta.New(0, device.Options{})} {
			g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 7), "gpt", c.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			B, T := 3, c.cfg.Context
			idx := randTokens(rand.New(rand.NewPCG(1, 1)), B*T, c.cfg.Vocab)
			want := logits(dev, g, B, T, idx)
			if dev.Kind() == "cpu" {
				p, err := quant.PrepareGPT(g, quant.Config{Activations: quant.Static})
				if err != nil {
					t.Fatal(err)
				}
				if e := relErr(logits(dev, p, B, T, idx), want); e != 0 {
					t.Errorf("%s: the prepared model differs from the float model by %g", c.name, e)
				}
			}
			for _, act := range []quant.Activations{quant.Dynamic, quant.Static} {
				before := dev.Stats().Tag(device.Parameter).Current
				q, err := quant.ConvertGPT(g, quant.Config{Activations: act}, tokens(dev, 2, 3, 4, T, c.cfg.Vocab))
				if err != nil {
					t.Fatal(err)
				}
				bytes := dev.Stats().Tag(device.Parameter).Current - before
				if w := gptBytes(g, act == quant.Static); bytes != w || nn.ParamBytes(q) != w {
					t.Errorf("%s %v on %s: %d parameter bytes (ParamBytes %d), want %d", c.name, act, dev.Kind(), bytes, nn.ParamBytes(q), w)
				}
				byDev[dev.Kind()+act.String()] = bytes
				got := logits(dev, q, B, T, idx)
				if len(got) != B*T*c.cfg.Vocab {
					t.Fatalf("%s: %d logits, want %d", c.name, len(got), B*T*c.cfg.Vocab)
				}
				if dev.Kind() == "cpu" {
					e := relErr(got, want)
					t.Logf("%s %v: logits' max error %.4f of their largest magnitude; int8 %d bytes of %d F32", c.name, act, e, bytes, nn.ParamBytes(g))
					if e > 0.05 || e == 0 {
						t.Errorf("%s %v: relative error %g, want 0 < e ≤ 0.05", c.name, act, e)
					}
				}
				nn.Release(q)
			}
			nn.Release(g)
			if live := dev.Stats().Requested.Current; live != 0 {
				t.Errorf("%s on %s: %d bytes still live: %v", c.name, dev.Kind(), live, dev.Leaks())
			}
		}
		for _, a := range []string{"dynamic", "static"} {
			if byDev["cpu"+a] != byDev["meta"+a] {
				t.Errorf("%s %s: cpu allocated %d parameter bytes, meta %d", c.name, a, byDev["cpu"+a], byDev["meta"+a])
			}
		}
	}
}

// TestCalibrateGPTWithoutDropout calibrates a GPT that has dropout, in
// training mode, twice on the same batches: the static scales agree (the
// dropouts were off during calibration, or the generator's advance would
// change them) and the dropouts are back in training mode afterwards.
func TestCalibrateGPTWithoutDropout(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	cfg := nn.GPTConfig{Vocab: 13, Context: 6, Layers: 2, Heads: 2, Width: 8, Dropout: 0.3, Bias: true}
	g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 2), "gpt", cfg, autograd.NewGenerator(5))
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(g)
	var scales [][]float64
	for range 2 {
		q, err := quant.ConvertGPT(g, quant.Config{Activations: quant.Static}, tokens(dev, 3, 2, 4, 6, 13))
		if err != nil {
			t.Fatal(err)
		}
		var s []float64
		for _, p := range q.Params() {
			if strings.HasSuffix(p.Name, ".input_scale") {
				s = append(s, p.T.Float64s()...)
			}
		}
		scales = append(scales, s)
		nn.Release(q)
	}
	if len(scales[0]) != 9 || !slices.Equal(scales[0], scales[1]) {
		t.Errorf("input scales of two calibrations: %v and %v", scales[0], scales[1])
	}
	if !g.Drop.Training() || !g.Blocks[0].MLP.Drop.Training() {
		t.Errorf("dropouts left in eval mode")
	}
}
