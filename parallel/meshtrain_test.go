package parallel_test

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/parallel"
)

// meshSetup is a composed-parallelism test: the pipeline test's model and
// batches (vocabulary 32, so that it splits) on a mesh, data-parallel
// rank d taking micro-batches d·M … d·M+M−1 of each step, against one
// device accumulating all Data·M of them.
type meshSetup struct {
	pipeSetup
	shape      parallel.MeshShape
	zero       int
	sequence   bool
	checkpoint bool
	wrapData   func(parallel.Communicator) parallel.Communicator // wraps each rank's Data group (nil: none)
	fails      func(rank, step int) bool                         // this rank's Tokens or Loss returns nil in step (nil: never)
	overflow   func(rank, step int) bool                         // under loss scaling: an infinity in this rank's gradients of step
}

func smallMesh(dt dtype.DType, shape parallel.MeshShape) meshSetup {
	ps := smallPipe(dt, shape.Pipe, parallel.OneFOneB)
	ps.cfg.Vocab = 32
	return meshSetup{pipeSetup: ps, shape: shape, zero: 1}
}

// meshRank is one rank's run: its losses, its parameters, its shapes and
// the bytes its allocator held by tag after the first step.
type meshRank struct {
	losses  []float64
	params  map[string][]float64
	stepped device.Stats
	flat    int // the DDP's flat elements, and its shard's
	shard   int
	buckets int
	norms   []float64 // under clipping or loss scaling: every step's global gradient norm (0: skipped)
	scales  []float64 // under loss scaling: the scale after every step
}

// reference is pipeSetup.reference over Data·M micro-batches, with every
// parameter's shape.
func (ms meshSetup) reference(t *testing.T) (pipeResult, map[string][]int) {
	ref := ms.pipeSetup
	ref.m *= ms.shape.Data
	ref.stages = 1
	shapes := map[string][]int{}
	g, err := nn.NewGPT(nn.NewBuilder(cpu.New(0, device.Options{}), ms.dt, 7), "gpt", ms.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range g.Params() {
		shapes[p.Name] = p.T.Shape()
	}
	nn.Release(g)
	return ref.reference(t), shapes
}

// run trains every rank of the mesh.
func (ms meshSetup) run() ([]meshRank, error) {
	meshes, err := parallel.NewMeshGroup(ms.shape)
	if err != nil {
		return nil, err
	}
	out := make([]meshRank, ms.shape.Size())
	err = parallel.RunMesh(meshes, func(m *parallel.Mesh) error {
		var err error
		out[m.World.Rank()], err = ms.rank(m)
		return err
	})
	return out, err
}

// stagePipe builds this rank's model and its pipeline stage, the loss
// of a micro-batch's logits against targets and the parameters the
// tensor group replicates.
func (ms meshSetup) stagePipe(m *parallel.Mesh, dev *device.Device) (*parallel.Pipe, func(*autograd.Tensor, []int64) *autograd.Tensor, []*autograd.Tensor, error) {
	b := nn.NewDeferredBuilder(dev, ms.dt, 7)
	cfg := parallel.PipeConfig{MicroBatches: ms.m, Batch: ms.batch, Seq: ms.seq, Schedule: ms.sched, Autocast: ms.autocast}
	if ms.shape.Tensor == 1 {
		g, err := nn.NewGPT(b, "gpt", ms.cfg, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		if ms.checkpoint {
			g.RunBlocks = checkpointed
		}
		pp, err := parallel.NewPipe(m.Pipe, g, cfg)
		return pp, func(logits *autograd.Tensor, tgt []int64) *autograd.Tensor {
			flat := logits.Reshape(-1, ms.cfg.Vocab)
			logits.Release()
			y := logits.Scope().FromInt64s(logits.Device(), []int{len(tgt)}, tgt)
			return autograd.CrossEntropy(flat, y, autograd.CEOptions{})
		}, nil, err
	}
	g, err := parallel.NewTensorGPT(b, "gpt", ms.cfg, m.Tensor, nil, parallel.TensorOptions{Sequence: ms.sequence})
	if err != nil {
		return nil, nil, nil, err
	}
	if ms.checkpoint {
		g.RunBlocks = checkpointed
	}
	pp, err := parallel.NewTensorPipe(m.Pipe, g, cfg)
	return pp, func(logits *autograd.Tensor, tgt []int64) *autograd.Tensor {
		y := logits.Scope().FromInt64s(logits.Device(), []int{ms.batch, ms.seq}, tgt)
		defer logits.Release()
		return g.Loss(logits, y, autograd.CEOptions{})
	}, g.Replicated(), err
}

// rank trains rank m: its stage over m.Pipe, data parallelism (ZeRO
// ms.zero) over m.Data of the stage's parameters, AdamW.
func (ms meshSetup) rank(m *parallel.Mesh) (meshRank, error) {
	res := meshRank{params: map[string][]float64{}}
	dev := cpu.New(m.World.Rank(), device.Options{})
	pp, loss, rep, err := ms.stagePipe(m, dev)
	if err != nil {
		return res, err
	}
	defer nn.Release(pp)
	data := m.Data
	if ms.wrapData != nil {
		data = ms.wrapData(data)
	}
	d, err := parallel.NewDDP(data, pp, parallel.DDPConfig{Zero: ms.zero})
	if err != nil {
		return res, err
	}
	defer d.Release()
	pp.SyncWith(d)
	opt, err := parallel.NewAdamW(d, ms.adam)
	if err != nil {
		return res, err
	}
	defer opt.Release()
	res.flat, res.shard, res.buckets = d.FlatLen(), d.ShardLen(), len(d.Buckets())
	up, err := ms.updater(m, pp, opt, rep)
	if err != nil {
		return res, err
	}
	for step := range ms.steps {
		first := m.DataRank * ms.m
		l, err := pp.Step(parallel.PipeBatch{
			Tokens: func(s *autograd.Scope, i int) *autograd.Tensor {
				if ms.fails != nil && ms.fails(m.World.Rank(), step) && i == 1 {
					return nil
				}
				idx, _ := ms.tokens(step, first+i)
				return s.FromInt64s(dev, []int{ms.batch, ms.seq}, idx)
			},
			Loss: func(logits *autograd.Tensor, i int) *autograd.Tensor {
				if ms.fails != nil && ms.fails(m.World.Rank(), step) && i == 2 {
					return nil
				}
				_, tgt := ms.tokens(step, first+i)
				return loss(logits, tgt)
			},
			Scale: up.scale(),
		})
		if err != nil {
			return res, err
		}
		if err := up.step(m, step, &res); err != nil {
			return res, err
		}
		if step == 0 {
			res.stepped = dev.Stats()
		}
		opt.ZeroGrad()
		res.losses = append(res.losses, l)
	}
	for _, p := range pp.Params() {
		res.params[p.Name] = p.T.Float64s()
	}
	return res, nil
}

// checkpointed runs blocks under activation checkpointing, each block
// recomputed in backward.
func checkpointed(blocks []nn.Layer, x *autograd.Tensor) *autograd.Tensor {
	return checkpoint.Sequential(blocks, len(blocks), x)
}

// stageOf returns the pipeline stage of parameter name among stages
// stages of DefaultSplit(layers).
func stageOf(name string, layers, stages int) int {
	switch {
	case strings.Contains(name, "wte.") || strings.Contains(name, "wpe."):
		return 0
	case strings.Contains(name, "ln_f.") || strings.Contains(name, "lm_head."):
		return stages - 1
	}
	_, rest, _ := strings.Cut(name, ".h.")
	num, _, _ := strings.Cut(rest, ".")
	b, _ := strconv.Atoi(num)
	split := parallel.DefaultSplit(layers, stages)
	for s, k := range split {
		if b < k {
			return s
		}
		b -= k
	}
	return -1
}

// meshCompare checks every rank against the reference: the mean over the
// data-parallel ranks of their losses, and each rank's parameters against
// its tensor-parallel part of its stage's parameters (all of them, none
// other), within rel (0: bit for bit). It returns the largest relative
// differences of the losses and of the parameters (relative to the
// larger of the value and 0.02, the initial standard deviation: a weight
// Adam has driven near zero keeps the absolute rounding of the others).
func (ms meshSetup) compare(got []meshRank, want pipeResult, shapes map[string][]int, rel, prel float64) (lossDiff, paramDiff float64, err error) {
	s := ms.shape
	for step, w := range want.losses {
		for tp := range s.Tensor {
			for pp := range s.Pipe {
				var sum float64
				for dp := range s.Data {
					sum += got[s.Rank(dp, tp, pp)].losses[step]
				}
				l := sum / float64(s.Data)
				lossDiff = math.Max(lossDiff, math.Abs(l-w)/math.Abs(w))
				if !near(l, w, rel) {
					return 0, 0, fmt.Errorf("step %d, tensor rank %d, stage %d: loss %v, one device %v", step, tp, pp, l, w)
				}
			}
		}
	}
	for r, g := range got {
		_, tp, pp := s.Coords(r)
		n := 0
		for name, v := range want.params {
			if stageOf(name, ms.cfg.Layers, s.Pipe) != pp {
				continue
			}
			n++
			w := shardOf(name, v, shapes[name], tp, s.Tensor)
			gv, ok := g.params[name]
			if !ok || len(gv) != len(w) {
				return 0, 0, fmt.Errorf("rank %d: %s has %d elements, want %d", r, name, len(gv), len(w))
			}
			for i := range w {
				if keyBias(name, i, ms.cfg.Width/s.Tensor) {
					continue
				}
				paramDiff = math.Max(paramDiff, math.Abs(gv[i]-w[i])/math.Max(math.Abs(w[i]), 0.02))
				if math.Abs(gv[i]-w[i]) > prel*math.Max(math.Abs(w[i]), 0.02) {
					return 0, 0, fmt.Errorf("rank %d: %s[%d] = %v, one device %v", r, name, i, gv[i], w[i])
				}
			}
		}
		if n != len(g.params) {
			return 0, 0, fmt.Errorf("rank %d holds %d parameters, its stage %d", r, len(g.params), n)
		}
	}
	return lossDiff, paramDiff, nil
}

// keyBias reports whether element i of a c_attn.bias shard (q, k, v of c
// features each) is a key bias: its gradient is zero in exact arithmetic
// (softmax over the keys is unchanged by adding q·b to every score), so
// its value is rounding noise that Adam's normalisation amplifies — the
// same noise nowhere else. It is left out of the comparisons.
func keyBias(name string, i, c int) bool {
	return strings.HasSuffix(name, "c_attn.bias") && i >= c && i < 2*c
}

// TestMeshMatchesOneDevice trains the 4-block GPT for 20 AdamW steps on
// the meshes DP2×TP2, DP2×PP2, TP2×PP2 and DP2×TP2×PP2 (8 ranks), ZeRO-1
// over each data-parallel group, in F64 and F32: the losses and every
// rank's parameters must match one device accumulating the same 2·4 (or
// 4) micro-batches. Bit for bit is not possible: the data-parallel mean
// adds the ranks' accumulated gradients ((g0+g1)/2, one device adds every
// micro-batch's g/8 in turn) and the tensor-parallel row outputs add the
// ranks' partial sums; so F64 within 1e-10 (losses and parameters), F32
// losses within 1e-5 and parameters within 1e-4 (relative; see compare).
// TP1 meshes' pipelines alone are bit-exact (TestPipeMatchesOneDevice).
func TestMeshMatchesOneDevice(t *testing.T) {
	meshMatches(t, 2, []parallel.MeshShape{{2, 2, 1}, {2, 1, 2}, {1, 2, 2}, {2, 2, 2}})
}

// TestMeshMatchesOneDeviceFourWay is TestMeshMatchesOneDevice with
// four-way splits composed with data parallelism: DP2×TP4 and DP2×PP4
// (8 ranks, ZeRO-1), on the 4-block GPT with 4 heads (one per tensor
// rank; one block per stage), 20 AdamW steps, F64 and F32, within the
// same tolerances.
func TestMeshMatchesOneDeviceFourWay(t *testing.T) {
	meshMatches(t, 4, []parallel.MeshShape{{2, 4, 1}, {2, 1, 4}})
}

// meshMatches trains the 4-block GPT with heads heads on each mesh shape
// for 20 steps, in F64 and F32, and compares it with one device (F64
// within 1e-10; F32 losses within 1e-5, parameters within 1e-4).
func meshMatches(t *testing.T, heads int, shapes []parallel.MeshShape) {
	for _, dt := range []dtype.DType{dtype.F64, dtype.F32} {
		rel := map[dtype.DType]float64{dtype.F64: 1e-10, dtype.F32: 1e-5}[dt]
		prel := map[dtype.DType]float64{dtype.F64: 1e-10, dtype.F32: 1e-4}[dt]
		for _, sh := range shapes {
			ms := smallMesh(dt, sh)
			ms.cfg.Heads = heads
			want, pshapes := ms.reference(t)
			start := time.Now()
			got, err := ms.run()
			if err != nil {
				t.Fatalf("%s %v: %v", dt, sh, err)
			}
			ld, pd, err := ms.compare(got, want, pshapes, rel, prel)
			if err != nil {
				t.Errorf("%s %v: %v", dt, sh, err)
				continue
			}
			t.Logf("%s %v: 20 steps in %v, losses %.4f → %.4f, largest relative difference: losses %.2g, parameters %.2g", dt, sh,
				time.Since(start).Round(time.Millisecond), want.losses[0], want.losses[len(want.losses)-1], ld, pd)
		}
	}
}

// TestMeshModelStatesPerRank holds every rank's model-state bytes after
// the first step (its allocator's, by tag) against the distributed
// optimizer's count: in F32, F32 parameters and gradients (4 + 4 bytes per
// element) and AdamW's two F32 moments sharded over the data-parallel
// group (8/DP), (4 + 4 + 8/DP)·Ψ_rank; in BF16 with F32 masters,
// (2 + 2 + 12/DP)·Ψ_rank (masters and moments sharded), where Ψ_rank is the
// rank's stage's elements, a tensor-parallel 1/TP of the split ones —
// counted here from the unsplit model's shapes. The shapes divide evenly,
// so no bucket is padded (checked: the flat buffer is Ψ_rank elements).
func TestMeshModelStatesPerRank(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		// bytes per element: parameter, gradient, optimizer state ×Data
		per := map[dtype.DType][3]int64{dtype.F32: {4, 4, 8}, dtype.BF16: {2, 2, 12}}[dt]
		for _, sh := range []parallel.MeshShape{{2, 2, 1}, {2, 1, 2}, {2, 2, 2}, {1, 2, 2}} {
			ms := smallMesh(dt, sh)
			ms.steps = 1
			ms.adam.MasterWeights = dt != dtype.F32
			_, shapes := ms.reference(t)
			got, err := ms.run()
			if err != nil {
				t.Fatalf("%s %v: %v", dt, sh, err)
			}
			for r, g := range got {
				psi := rankElements(ms, shapes, r)
				if int64(g.flat) != psi || int64(g.shard*sh.Data) != psi {
					t.Fatalf("%s %v rank %d: flat %d, shard %d elements, want Ψ_rank %d and Ψ_rank/%d", dt, sh, r, g.flat, g.shard, psi, sh.Data)
				}
				want := map[device.Tag]int64{device.Parameter: per[0] * psi, device.Gradient: per[1] * psi, device.Optimizer: per[2] * psi / int64(sh.Data)}
				for tag, w := range want {
					if b := g.stepped.ByTag[tag].Current; b != w {
						t.Errorf("%s %v rank %d: %s %d bytes, want %d (Ψ_rank %d)", dt, sh, r, tag, b, w, psi)
					}
				}
				if r == sh.Size()-1 {
					t.Logf("%s %v rank %d: Ψ_rank %d: parameters %d, gradients %d, optimizer %d bytes = (%d + %d + %d/%d)·Ψ_rank", dt, sh, r, psi,
						g.stepped.ByTag[device.Parameter].Current, g.stepped.ByTag[device.Gradient].Current, g.stepped.ByTag[device.Optimizer].Current, per[0], per[1], per[2], sh.Data)
				}
			}
		}
	}
}

// rankElements is Ψ_rank: the elements of rank r's stage's parameters,
// its tensor-parallel part of the split ones, from the unsplit shapes.
func rankElements(ms meshSetup, shapes map[string][]int, r int) int64 {
	_, tp, pp := ms.shape.Coords(r)
	var psi int64
	for name, shape := range shapes {
		if stageOf(name, ms.cfg.Layers, ms.shape.Pipe) == pp {
			n := 1
			for _, d := range shape {
				n *= d
			}
			psi += int64(len(shardOf(name, make([]float64, n), shape, tp, ms.shape.Tensor)))
		}
	}
	return psi
}

// reductions counts a communicator's gradient reductions.
type reductions struct {
	parallel.Communicator
	n *atomic.Int64
}

func (c reductions) AllReduce(t *autograd.Tensor, op parallel.Op) error {
	c.n.Add(1)
	return c.Communicator.AllReduce(t, op)
}

func (c reductions) ReduceScatter(dst, src *autograd.Tensor, op parallel.Op) error {
	c.n.Add(1)
	return c.Communicator.ReduceScatter(dst, src, op)
}

// TestMeshReducesOncePerStep: with Pipe.SyncWith the data-parallel group
// reduces each gradient bucket once per step (the 4 micro-batches
// accumulate under NoSync), not once per micro-batch — the results agree
// either way (an average of sums is the sum of averages), so only the
// count tells.
func TestMeshReducesOncePerStep(t *testing.T) {
	ms := smallMesh(dtype.F32, parallel.MeshShape{Data: 2, Tensor: 1, Pipe: 2})
	ms.steps = 3
	var n atomic.Int64
	ms.wrapData = func(c parallel.Communicator) parallel.Communicator { return reductions{c, &n} }
	got, err := ms.run()
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, g := range got {
		want += ms.steps * g.buckets
	}
	if n.Load() != int64(want) {
		t.Errorf("%d reductions over the data groups in %d steps, want one per bucket per step: %d", n.Load(), ms.steps, want)
	}
}

// TestMeshStageFeatures runs what a stage may add on 20 AdamW steps:
// activation checkpointing (every stage's blocks recomputed in backward)
// on DP2×TP2×PP2 must give the same mesh's run without it bit for bit, in
// F64; sequence parallelism on TP2×PP2 and DP2×TP2×PP2 must match one
// device as TestMeshMatchesOneDevice does (F64 within 1e-10); BF16
// autocast over F32 parameters on a PP2 mesh must equal one device's
// train.Stepper with the same Autocast bit for bit (the pipeline adds
// nothing), and on DP2×TP2×PP2 equal the DP2×TP2 mesh's run (one stage)
// bit for bit, with losses within 2.5e-2 of one device's (16-bit partial
// sums are rounded before the tensor-parallel reductions add them, which
// Adam amplifies in the parameters: TP's own tolerance, see
// TestTensorParallelGPTLowerPrecision).
func TestMeshStageFeatures(t *testing.T) {
	all := parallel.MeshShape{Data: 2, Tensor: 2, Pipe: 2}
	t.Run("checkpoint", func(t *testing.T) {
		plain, err := smallMesh(dtype.F64, all).run()
		if err != nil {
			t.Fatal(err)
		}
		ms := smallMesh(dtype.F64, all)
		ms.checkpoint = true
		got, err := ms.run()
		if err != nil {
			t.Fatal(err)
		}
		for r := range got {
			if err := compare(pipeResult{losses: got[r].losses, params: got[r].params}, pipeResult{losses: plain[r].losses, params: plain[r].params}, 0); err != nil {
				t.Errorf("rank %d checkpointed: %v", r, err)
			}
		}
	})
	t.Run("autocast/2×2×2", func(t *testing.T) {
		flat := smallMesh(dtype.F32, parallel.MeshShape{Data: 2, Tensor: 2, Pipe: 1})
		flat.autocast = dtype.BF16
		one, err := flat.run()
		if err != nil {
			t.Fatal(err)
		}
		ms := smallMesh(dtype.F32, all)
		ms.autocast = dtype.BF16
		want, shapes := ms.reference(t)
		got, err := ms.run()
		if err != nil {
			t.Fatal(err)
		}
		for r := range got {
			dp, tp, _ := all.Coords(r)
			ref := one[flat.shape.Rank(dp, tp, 0)]
			sub := pipeResult{losses: ref.losses, params: map[string][]float64{}}
			for name := range got[r].params {
				sub.params[name] = ref.params[name]
			}
			if err := compare(pipeResult{losses: got[r].losses, params: got[r].params}, sub, 0); err != nil {
				t.Errorf("rank %d against the one-stage mesh: %v", r, err)
			}
		}
		ld, _, err := ms.compare(got, want, shapes, 2.5e-2, math.Inf(1))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("losses %.4f → %.4f, largest relative difference to one device %.2g", want.losses[0], want.losses[len(want.losses)-1], ld)
	})
	for _, c := range []struct {
		name      string
		shape     parallel.MeshShape
		dt        dtype.DType
		seq       bool
		amp       dtype.DType
		rel, prel float64
	}{
		{"sequence", parallel.MeshShape{Data: 1, Tensor: 2, Pipe: 2}, dtype.F64, true, dtype.Invalid, 1e-10, 1e-10},
		{"sequence", all, dtype.F64, true, dtype.Invalid, 1e-10, 1e-10},
		{"autocast", parallel.MeshShape{Data: 1, Tensor: 1, Pipe: 2}, dtype.F32, false, dtype.BF16, 0, 0},
	} {
		t.Run(fmt.Sprintf("%s/%v", c.name, c.shape), func(t *testing.T) {
			ms := smallMesh(c.dt, c.shape)
			ms.sequence, ms.autocast = c.seq, c.amp
			want, shapes := ms.reference(t)
			got, err := ms.run()
			if err != nil {
				t.Fatal(err)
			}
			ld, pd, err := ms.compare(got, want, shapes, c.rel, c.prel)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("losses %.4f → %.4f, largest relative difference: losses %.2g, parameters %.2g", want.losses[0], want.losses[len(want.losses)-1], ld, pd)
		})
	}
}

// TestMeshTrainingFailure trains DP2×TP2×PP2 with each rank in turn
// failing in step 2 (stage 0's Tokens or the last stage's Loss returns
// nil, mid-step, while the others are in pipeline transfers, tensor-parallel
// collectives or data-parallel reductions): every rank must return
// within 10 s, the failed one with its own error, the others with an
// *AbortError naming it (or its message: a reduction that fails inside
// backward reaches the rank through autograd's error, as text).
func TestMeshTrainingFailure(t *testing.T) {
	ms := smallMesh(dtype.F32, parallel.MeshShape{Data: 2, Tensor: 2, Pipe: 2})
	ms.steps = 4
	for bad := range ms.shape.Size() {
		ms.fails = func(rank, step int) bool { return rank == bad && step == 2 }
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := ms.run()
			done <- err
		}()
		var err error
		select {
		case <-time.After(10 * time.Second):
			t.Fatalf("rank %d failing: no result within 10s: a deadlock", bad)
		case err = <-done:
		}
		errs := err.(interface{ Unwrap() []error }).Unwrap()
		if len(errs) != ms.shape.Size() {
			t.Errorf("rank %d failing: %d ranks failed, want %d: %v", bad, len(errs), ms.shape.Size(), err)
		}
		for _, e := range errs {
			var re *parallel.RankError
			var ae *parallel.AbortError
			switch {
			case !errors.As(e, &re):
				t.Errorf("%v is not a RankError", e)
			case re.Rank == bad && !strings.Contains(e.Error(), "returned nil"):
				t.Errorf("the failing rank %d: %v", bad, e)
			case re.Rank != bad && (!errors.As(e, &ae) || ae.Rank != bad) && !strings.Contains(e.Error(), fmt.Sprintf("because rank %d failed", bad)):
				t.Errorf("rank %d failing: rank %d returned %v, want an AbortError naming rank %d", bad, re.Rank, e, bad)
			}
		}
		t.Logf("rank %d failing: all returned in %v", bad, time.Since(start).Round(time.Millisecond))
	}
}
