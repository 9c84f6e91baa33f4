package autograd_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/cputime"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

// abBias times f with Linear's bias fused and copied into the output
// first, alternately, b.N times each, and reports the least processor
// time of each (the least disturbed by other processes on a shared
// machine; run with -cpu 1, so that no worker's spinning counts) and
// their ratio.
func abBias(b *testing.B, f func()) {
	defer autograd.SetLinearBiasCopy(autograd.SetLinearBiasCopy(false))
	best := [2]time.Duration{math.MaxInt64, math.MaxInt64}
	for b.Loop() {
		for i, copyBias := range []bool{false, true} {
			autograd.SetLinearBiasCopy(copyBias)
			t0 := cputime.Process()
			f()
			best[i] = min(best[i], cputime.Process()-t0)
		}
	}
	b.ReportMetric(best[0].Seconds()*1e3, "fused-ms")
	b.ReportMetric(best[1].Seconds()*1e3, "copy-ms")
	b.ReportMetric(best[0].Seconds()/best[1].Seconds(), "fused/copy")
}

// BenchmarkLinearBias times Linear's forward pass with the bias fused into
// the GEMM and copied into the output first (abBias), on the Linears of a
// width-256 GPT over 16 sequences of 256 tokens (qkv, MLP up and down),
// F32 and BF16.
func BenchmarkLinearBias(b *testing.B) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sh := range [][3]int{{4096, 256, 768}, {4096, 256, 1024}, {4096, 1024, 256}} {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			b.Run(fmt.Sprintf("%dx%d→%d/%s", sh[0], sh[1], sh[2], dt), func(b *testing.B) {
				s := autograd.NewScope()
				defer s.Release()
				x := s.FromFloat64s(dev, []int{sh[0], sh[1]}, randVals(rng, sh[0]*sh[1])).Cast(dt)
				w := s.FromFloat64s(dev, []int{sh[2], sh[1]}, randVals(rng, sh[2]*sh[1])).Cast(dt)
				bias := s.FromFloat64s(dev, []int{sh[2]}, randVals(rng, sh[2])).Cast(dt)
				abBias(b, func() { autograd.Linear(x, w, bias).Release() })
			})
		}
	}
}

// BenchmarkGPTStepBias times one Adam step of a GPT (width 256, 6 layers,
// 8 heads, vocabulary 256, biases, tied head) on 16 sequences of 256
// tokens, in F32 and under BF16 autocast, with Linear's bias fused and
// copied (abBias).
func BenchmarkGPTStepBias(b *testing.B) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		b.Run(dt.String(), func(b *testing.B) { gptStepBias(b, dt) })
	}
}

func gptStepBias(b *testing.B, dt dtype.DType) {
	const batch, seq, vocab = 16, 256, 256
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	cfg := nn.GPTConfig{Vocab: vocab, Context: seq, Layers: 6, Heads: 8, Width: 256, Bias: true, TieEmbeddings: true}
	g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "gpt", cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer nn.Release(g)
	opt, err := optim.NewAdam(g.Params(), optim.AdamConfig{LR: 1e-4})
	if err != nil {
		b.Fatal(err)
	}
	defer opt.Release()
	rng := rand.New(rand.NewPCG(3, 4))
	tok := make([]int64, batch*(seq+1))
	for i := range tok {
		tok[i] = int64(rng.IntN(vocab))
	}
	st := &train.Stepper{Opt: opt}
	if dt != dtype.F32 {
		st.Autocast = dt
	}
	step := func() {
		if _, _, err := st.Step(func(s *autograd.Scope, _ int) *autograd.Tensor {
			x, y := s.FromInt64s(dev, []int{batch, seq}, tok[:batch*seq]), s.FromInt64s(dev, []int{batch * seq}, tok[batch:])
			return autograd.CrossEntropy(g.Forward(x).Reshape(batch*seq, vocab), y, autograd.CEOptions{})
		}); err != nil {
			b.Fatal(err)
		}
	}
	step() // warm-up: the allocator's cache and the packed buffers
	abBias(b, step)
}
