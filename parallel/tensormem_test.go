package parallel_test

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/parallel"
)

// gptElements returns a GPT's parameter elements that tensor parallelism
// splits (the embedding and head tables, c_attn, c_fc and the c_proj
// weights) and those it keeps whole on every rank (the position table,
// the LayerNorms, the c_proj biases).
func gptElements(c nn.GPTConfig) (split, whole int64) {
	v, w, l := int64(c.Vocab), int64(c.Width), int64(c.Layers)
	split = v*w + l*(3*w*w+w*w+4*w*w+4*w*w)
	whole = int64(c.Context)*w + w + l*2*w // wpe, ln_f and ln_1, ln_2 weights
	if !c.TieEmbeddings {
		split += v * w
	}
	if c.Bias {
		split += l * (3*w + 4*w) // c_attn, c_fc biases
		whole += w + l*(2*w+2*w) // ln_f bias; ln_1, ln_2 biases and the two c_proj biases
	}
	return split, whole
}

// TestTensorParallelModelStatesPerRank holds each rank's parameter,
// gradient and optimizer bytes (the allocator's, by tag, after the first
// AdamW step) against the closed form: the split parameters' 1/T and the
// whole ones', T = 2 and 4, with and without sequence parallelism —
// checked first on one device against the unsplit GPT's.
func TestTensorParallelModelStatesPerRank(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.F64} {
		base := tpRun{dt: dt, cfg: tpSmall, batch: 2, steps: 1}
		sz := int64(dt.Size())
		split, whole := gptElements(base.cfg)
		ref := tpTrain(t, base)[0]
		opt := ref.stepped.Tag(device.Optimizer).Current / (split + whole) // AdamW's bytes per element
		for _, tag := range []device.Tag{device.Parameter, device.Gradient} {
			if got := ref.stepped.Tag(tag).Current; got != (split+whole)*sz {
				t.Fatalf("%s unsplit: %s %d bytes, want (%d + %d)·%d", dt, tag, got, split, whole, sz)
			}
		}
		if opt*(split+whole) != ref.stepped.Tag(device.Optimizer).Current || opt != 2*sz {
			t.Fatalf("%s unsplit: optimizer %d bytes for %d elements: want 2·%d per element", dt, ref.stepped.Tag(device.Optimizer).Current, split+whole, sz)
		}
		for _, n := range []int{2, 4} {
			for _, seq := range []bool{false, true} {
				s := base
				s.ranks, s.seq = n, seq
				for r, got := range tpTrain(t, s) {
					el := split/int64(n) + whole
					want := map[device.Tag]int64{device.Parameter: el * sz, device.Gradient: el * sz, device.Optimizer: el * opt}
					for tag, w := range want {
						if g := got.stepped.Tag(tag).Current; g != w {
							t.Errorf("%s, %d ranks, sequence %v, rank %d: %s %d bytes, want (%d/%d + %d)·%d = %d", dt, n, seq, r, tag, g, split, n, whole, w/el, w)
						}
					}
				}
			}
		}
	}
}

// blockActivations returns the activation bytes that one block's forward
// leaves (what it saves for backward and its result) on each rank: the
// unsplit nn.GPTBlock for ranks 0, else the tensor-parallel block's,
// measured by each rank's allocator around Forward on a batch (b, cfg.Context).
func blockActivations(t *testing.T, cfg nn.GPTConfig, dt dtype.DType, b, ranks int, seq bool) []int64 {
	t.Helper()
	n := max(ranks, 1)
	out := make([]int64, n)
	tokens := b * cfg.Context
	body := func(c parallel.Communicator, r int) error {
		dev := cpu.New(r, device.Options{})
		bld := nn.NewBuilder(dev, dt, 1)
		gen := autograd.NewGenerator(2)
		var block nn.Layer
		rows := tokens
		shape := []int{b, cfg.Context, cfg.Width}
		if c == nil {
			block = nn.NewGPTBlock(bld, "h.0", cfg, gen)
		} else {
			g, err := parallel.NewTensorGPT(bld, "", cfg, c, gen, parallel.TensorOptions{Sequence: seq})
			if err != nil {
				return err
			}
			defer nn.Release(g)
			// Forward sets the batch's shape for the blocks: run it once.
			sc := autograd.NewScope()
			if err := sc.Run(func() error {
				g.Forward(sc.FromInt64s(dev, []int{b, cfg.Context}, make([]int64, tokens)))
				return nil
			}); err != nil {
				return err
			}
			block = g.Blocks[0]
			if seq {
				rows = tokens / n
				shape = []int{rows, cfg.Width}
			}
		}
		defer nn.Release(block)
		s := autograd.NewScope()
		return s.Run(func() error {
			x := s.Full(dev, dt, 0.5, shape...).SetRequiresGrad(true)
			before := dev.Stats().Tag(device.Activation).Current
			y := block.Forward(x)
			out[r] = dev.Stats().Tag(device.Activation).Current - before
			return y.Sum(false).Backward()
		})
	}
	var err error
	if ranks == 0 {
		err = body(nil, 0)
	} else {
		err = parallel.Run(parallel.NewGroup(n), func(c parallel.Communicator) error { return body(c, c.Rank()) })
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTensorParallelActivationsPerLayer holds one block's activation bytes
// per rank against this implementation's closed forms, for N = B·T tokens,
// width C, H heads, T ranks, s the dtype's size and cs the LayerNorm and
// attention statistics' (4 for F32, 8 for F64):
//
//	unsplit (nn.GPTBlock)          17·N·C·s + 4·N·cs + B·H·T·cs
//	tensor parallel                (4 + 13/T)·N·C·s + 4·N·cs + B·(H/T)·T·cs
//	tensor + sequence parallel     (17·N·C·s + 4·N·cs + B·H·T·cs)/T
//
// less N·C·s/T when each rank holds one head (H = T: attention's output
// back in (B, T, C/T) layout is a view, not a copy).
//
// Korthikanti et al.'s Table 2 in this notation (s = 2, masks of 1 byte,
// attention scores stored) is N·C·(34 + 5·H·T/C), N·C·(10 + 24/T +
// 5·H·T/(C·T)) and N·C·(34 + 5·H·T/C)/T.
func TestTensorParallelActivationsPerLayer(t *testing.T) {
	cfg := nn.GPTConfig{Vocab: 16, Context: 8, Layers: 1, Heads: 4, Width: 16, Bias: true, Dropout: 0.1}
	const b = 2
	N, C, H := int64(b*cfg.Context), int64(cfg.Width), int64(cfg.Heads)
	for _, dt := range []dtype.DType{dtype.F32, dtype.F64} {
		s, cs := int64(dt.Size()), int64(dt.Size())
		stats := 4*N*cs + b*H*int64(cfg.Context)*cs
		if got, want := blockActivations(t, cfg, dt, b, 0, false)[0], 17*N*C*s+stats; got != want {
			t.Fatalf("%s unsplit block: %d activation bytes, want 17·N·C·s + 4·N·cs + B·H·T·cs = %d", dt, got, want)
		}
		for _, n := range []int64{2, 4} {
			// One head per rank: attention's output in (B, T, C/T) layout is
			// a view of its (B, 1, T, D) result, not a copy.
			one := int64(0)
			if H == n {
				one = N * C * s / n
			}
			tp := (4*n+13)*N*C*s/n + 4*N*cs + b*(H/n)*int64(cfg.Context)*cs - one
			sp := (17*N*C*s+stats)/n - one
			for _, c := range []struct {
				seq  bool
				want int64
			}{{false, tp}, {true, sp}} {
				for r, got := range blockActivations(t, cfg, dt, b, int(n), c.seq) {
					if got != c.want {
						t.Errorf("%s, %d ranks, sequence %v, rank %d: %d activation bytes, want %d", dt, n, c.seq, r, got, c.want)
					}
				}
			}
		}
	}
}
