package checkpoint_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// TestAutocastCastsAtPeak says which BF16 autocast casts of the weights
// are alive at a step's peak, with n = 6 GPT blocks run plain or under
// Sequential checkpointing: only the first block's, whose backward is
// the last, where the peak is. Each cast is freed as soon as backward has
// passed it — the plain (last) segment's, cached in the step's scope, as
// well as a recomputed segment's, cached in its child scope — so every
// cast's free is in backward, none left for the step's Release. (They
// were once kept until Release: at the peak, the casts of the last
// segment's k blocks besides those of the segment being recomputed,
// 2k blocks, and all n without checkpointing; 1.81 GB on rank 0 of
// gpt3-175b TP 8 × PP 16 under --amp bf16 --checkpoint.) A block's casts
// are 2·(12W² + 9W) bytes, its four Linear layers' weights and biases
// (the LayerNorms compute in F32 from their F32 weights). The live set is
// read off the allocator's timeline.
//
// PyTorch 1.13 (cpu, bf16, checkpoint_sequential; measured with storage
// weak references) is the same in backward: backward runs outside the
// autocast region, so a cast lives only as a tensor its graph saved, and
// during a block's backward only the casts of blocks not yet passed are
// alive. In forward its cache holds more: it keeps a parameter's cast
// even in the no-grad forward of a checkpointed segment until the region
// exits, so all n casts are alive at the end of the forward; here a
// checkpointed segment's forward casts go with its child scope.
func TestAutocastCastsAtPeak(t *testing.T) {
	const n, width = 6, 64
	perBlock := int64(2 * (12*width*width + 9*width))
	for _, segs := range []int{0, 1, 2, 3, 6} {
		r := castsAtPeak(t, n, width, segs)
		var got []int
		var total int64
		for b, bytes := range r.live {
			got = append(got, b)
			total += bytes
		}
		slices.Sort(got)
		if len(got) != 1 || got[0] != 0 || total > perBlock || r.phase != "backward" {
			t.Errorf("segments %d: casts of blocks %v (%d B) alive at the peak (in %s), want block 0's only, at most 2·(12·%d² + 9·%d) = %d B, in backward",
				segs, got, total, r.phase, width, width, perBlock)
		}
		k := n // the plain last segment's blocks, cast once; the others twice (forward and recomputation)
		if segs > 1 {
			k = n / segs
		}
		if want := int64(2*n-k) * perBlock; r.made != want || r.freedLate != 0 {
			t.Errorf("segments %d: %d B of casts made (want %d blocks' casts: %d), %d B alive after backward (want 0)",
				segs, r.made, 2*n-k, want, r.freedLate)
		}
		t.Logf("segments %d: at the peak (%s) the casts of blocks %v are alive, %d B; %d B of casts made, all freed in backward", segs, r.phase, got, total, r.made)
	}
}

// castPeak is what castsAtPeak reads off the timeline: the bytes of
// autocast casts alive at the peak by block, the phase of the peak's
// event, the bytes of casts made and of those alive after backward.
type castPeak struct {
	live            map[int]int64
	phase           string
	made, freedLate int64
}

// castsAtPeak runs one BF16-autocast step of n GPT blocks of width width
// on cpu (plain for segs 0, else checkpoint.Sequential(segs)) and reads
// the autocast casts off the allocator's timeline.
func castsAtPeak(t *testing.T, n, width, segs int) castPeak {
	t.Helper()
	dev := cpu.New(0, device.Options{})
	ls, m := gptBlocks(dev, n, width)
	defer nn.Release(m)
	dev.StartTimeline()
	s := autograd.NewScope()
	xs := blockInput(s, dev, width)
	var loss *autograd.Tensor
	s.Autocast(dtype.BF16, func() {
		var h *autograd.Tensor
		if segs == 0 {
			h = m.Forward(xs)
		} else {
			h = checkpoint.Sequential(ls, segs, xs)
		}
		loss = h.Pow(2).Mean(false)
	})
	err := loss.Backward()
	var late int64 // casts still alive when backward has returned
	for _, g := range dev.Live() {
		if strings.HasSuffix(g.Creator, "/autocast") {
			late += g.Bytes
		}
	}
	s.Release()
	tl := dev.StopTimeline()
	if err != nil {
		t.Fatal(err)
	}
	_, at := tl.Peak()
	r := castPeak{live: map[int]int64{}, phase: tl.Events[at].Phase, freedLate: late}
	alive := map[uint64]device.Event{}
	for i, e := range tl.Events {
		switch {
		case e.Kind == "alloc":
			alive[e.Addr] = e
			if e.Op == "autocast" {
				r.made += e.Bytes
			}
		case e.Kind == "free":
			delete(alive, e.Addr)
		}
		if i == at {
			for _, a := range alive {
				if a.Op == "autocast" {
					r.live[blockOf(t, a.Scope)] += a.Bytes
				}
			}
		}
	}
	return r
}

// blockOf returns the block number of parameter name "h<i>.…".
func blockOf(t *testing.T, name string) int {
	num, _, _ := strings.Cut(strings.TrimPrefix(name, "h"), ".")
	b, err := strconv.Atoi(num)
	if err != nil {
		t.Fatalf("an autocast cast of %q", name)
	}
	return b
}

// TestAutocastCastFreeChangesNoBit: freeing a cast as backward passes it
// changes no gradient bit. Backward with RetainGraph keeps every node,
// so every cast stays until Release, as before; without it the casts go
// as backward passes them. The gradients of the same BF16-autocast step
// of the checkpointed GPT blocks must be equal bit for bit.
func TestAutocastCastFreeChangesNoBit(t *testing.T) {
	kept := autocastGrads(t, autograd.RetainGraph())
	freed := autocastGrads(t)
	for name, g := range kept {
		if !slices.Equal(g, freed[name]) {
			t.Errorf("%s: gradient with the casts freed in backward differs from the one with them kept", name)
		}
	}
	if len(kept) == 0 || len(kept) != len(freed) {
		t.Fatalf("%d and %d gradients", len(kept), len(freed))
	}
}

// autocastGrads runs one BF16-autocast step of 6 GPT blocks in 3
// checkpointed segments and returns every parameter's gradient.
func autocastGrads(t *testing.T, opts ...autograd.BackwardOption) map[string][]float64 {
	t.Helper()
	dev := cpu.New(0, device.Options{})
	ls, m := gptBlocks(dev, 6, 32)
	defer nn.Release(m)
	s := autograd.NewScope()
	defer s.Release()
	xs := blockInput(s, dev, 32)
	var loss *autograd.Tensor
	s.Autocast(dtype.BF16, func() { loss = checkpoint.Sequential(ls, 3, xs).Pow(2).Mean(false) })
	if err := loss.Backward(opts...); err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	for _, p := range m.Params() {
		out[p.Name] = p.T.Grad().Float64s()
	}
	return out
}

// gptBlocks builds n F32 GPT blocks h0 … h<n−1> of width width (2 heads,
// context 8) on dev, and the module holding them.
func gptBlocks(dev *device.Device, n, width int) ([]nn.Layer, *nn.Sequential) {
	gen := autograd.NewGenerator(9)
	cfg := nn.GPTConfig{Vocab: 16, Context: 8, Layers: n, Heads: 2, Width: width, Bias: true}
	b := nn.NewBuilder(dev, dtype.F32, 4)
	var ls []nn.Layer
	for i := range n {
		ls = append(ls, nn.NewGPTBlock(b, fmt.Sprintf("h%d", i), cfg, gen))
	}
	return ls, nn.NewSequential(ls...)
}

// blockInput returns the blocks' F32 input [2, 8, width] in s.
func blockInput(s *autograd.Scope, dev *device.Device, width int) *autograd.Tensor {
	x := make([]float64, 2*8*width)
	for i := range x {
		x[i] = math.Sin(float64(i) * 0.7)
	}
	return s.FromFloat64s(dev, []int{2, 8, width}, x).Cast(dtype.F32)
}
