package parallel_test

import (
	"fmt"
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
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
)

// gatherCounter counts a rank's all-gathers.
type gatherCounter struct {
	parallel.Communicator
	n atomic.Int64
}

func (c *gatherCounter) AllGather(dst, src *autograd.Tensor) error {
	c.n.Add(1)
	return c.Communicator.AllGather(dst, src)
}

// TestStage3GathersOneBucketAtATime trains three equal layers (fc0, fc1,
// fc2: 42 elements, one bucket each, c = ⌈42/N⌉ per rank) under stage 3
// and follows each rank's bytes through the step:
//
//   - after NewDDP the rank holds its shard only: 3·g·c parameter bytes;
//   - the forward gathers each bucket once, one at a time: its
//     communication peak is 8·N (AllSum's words) + g·N·c, and fc2's bucket
//     is still gathered at its end;
//   - backward uses fc2's bucket and frees it, gathers fc1's again (fc1
//     saved its weight as a reference), and not fc0's (its input needs no
//     gradient, so it saved no weight): 4 gathers in all. Each bucket is
//     freed before its gradient bucket is made, so the step's
//     communication peak is stage 2's, 8·N + 2·g·(N+1)·c, and nothing but
//     the 8·N bytes is left after it.
func TestStage3GathersOneBucketAtATime(t *testing.T) {
	const u = 6*6 + 6
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, n := range []int{1, 2, 4} {
			g, c := int64(dt.Size()), int64((u+n-1)/n)
			err := parallel.Run(parallel.NewGroup(n), func(cm parallel.Communicator) error {
				cnt := &gatherCounter{Communicator: cm}
				dev := cpu.New(cm.Rank(), device.Options{})
				model := mlp(nn.NewBuilder(dev, dt, 3), []int{6, 6, 6, 6})
				defer nn.Release(model)
				d, err := parallel.NewDDP(cnt, model, parallel.DDPConfig{Zero: 3, BucketBytes: u * g})
				if err != nil {
					return err
				}
				defer d.Release()
				opt, err := parallel.NewAdamW(d, optim.AdamConfig{LR: 0.01, MasterWeights: dt != dtype.F32})
				if err != nil {
					return err
				}
				defer opt.Release()
				comm := func() device.Counter { return dev.Stats().ByTag[device.Communication] }
				check := func(what string, got, want int64) {
					if got != want && err == nil {
						err = fmt.Errorf("%s, %d ranks, rank %d: %s = %d, want %d", dt, n, cm.Rank(), what, got, want)
					}
				}
				dev.ResetPeak()
				check("parameter bytes after NewDDP", dev.Stats().ByTag[device.Parameter].Current, 3*g*c)
				s := autograd.NewScope()
				defer s.Release()
				x := s.FromFloat32s(dev, []int{2, 6}, []float32{1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, float32(cm.Rank())})
				if dt != dtype.F32 {
					x = x.Cast(dt)
				}
				loss := autograd.CrossEntropy(model.Forward(x), s.FromInt64s(dev, []int{2}, []int64{0, 5}), autograd.CEOptions{})
				check("forward gathers", cnt.n.Load(), 3)
				check("forward communication peak", comm().Peak, 8*int64(n)+g*int64(n)*c)
				check("communication bytes after forward", comm().Current, 8*int64(n)+g*int64(n)*c)
				if err := loss.Backward(); err != nil {
					return err
				}
				s.Release()
				check("gathers after backward", cnt.n.Load(), 4)
				check("communication bytes after backward", comm().Current, 8*int64(n))
				if err := opt.Step(); err != nil {
					return err
				}
				opt.ZeroGrad()
				check("gathers after the step", cnt.n.Load(), 4)
				check("step's communication peak", comm().Peak, 8*int64(n)+2*g*int64(n+1)*c)
				check("parameter bytes after the step", dev.Stats().ByTag[device.Parameter].Peak, 3*g*c)
				check("gradient peak", dev.Stats().ByTag[device.Gradient].Peak, 3*g*c)
				if err == nil && cm.Rank() == 0 && n == 4 {
					t.Logf("%s, 4 ranks: shard %d B, forward peak %d B, step peak %d B of communication", dt, 3*g*c, 8*int64(n)+g*int64(n)*c, comm().Peak)
				}
				return err
			})
			if err != nil {
				t.Error(err)
			}
		}
	}
}

// TestStage3OnMetaAllocatesLikeCPU trains the same model under stage 3 on
// cpu and on meta devices (which hold no data: every collective only
// synchronises) — with accumulation, clipping, checkpointing, offload, and
// F16 autocast with checkpointing —
// and requires every rank's accounting to be byte-identical: a plan made
// on meta is what the run will allocate.
func TestStage3OnMetaAllocatesLikeCPU(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, n := range []int{1, 2, 4} {
			for _, extra := range []func(*setup){
				func(*setup) {},
				func(s *setup) { s.accum, s.clip, s.ckpt = 2, 0.5, true },
				func(s *setup) { s.offload, s.bucket = true, 100 },
				func(s *setup) { s.amp, s.ckpt, s.bucket = dtype.F16, true, 100 },
			} {
				s := setup{ranks: n, zero: 3, dt: dt, widths: []int{5, 7, 4, 3}, batch: 8, steps: 2}
				extra(&s)
				onCPU := run(t, s)
				s.meta = true
				onMeta := run(t, s)
				for r := range n {
					a, b := onCPU[r].dev, onMeta[r].dev
					a.Device, b.Device = "", ""
					if a != b {
						t.Errorf("%s, %d ranks, accum %d ckpt %v offload %v: rank %d's accounting on meta differs from cpu:\ncpu  %+v\nmeta %+v",
							dt, n, s.accum, s.ckpt, s.offload, r, a, b)
					}
					a, b = onCPU[r].host, onMeta[r].host
					a.Device, b.Device = "", ""
					if a != b {
						t.Errorf("%s, %d ranks, offload: rank %d's host accounting on meta differs from cpu", dt, n, r)
					}
				}
			}
		}
	}
}

// TestUnshardAndRelease checks what happens to a stage-3 model's
// parameters: after NewDDP they have no storage (the rank holds rank 0's
// values in its shard); Unshard gathers all of them — rank 0's values on
// every rank — into Ψ′ elements tagged communication, Reshard frees them;
// Release keeps an unsharded model usable and leaves a sharded one
// without storage, which then fails with an error saying so.
func TestUnshardAndRelease(t *testing.T) {
	initial := make([][]float64, 2)
	for r := range initial { // rank r's model as built, before NewDDP
		dev := cpu.New(r, device.Options{})
		m := mlp(nn.NewBuilder(dev, dtype.F32, uint64(10+r)), []int{3, 5, 2})
		for _, p := range m.Params() {
			initial[r] = append(initial[r], p.T.Float64s()...)
		}
		nn.Release(m)
	}
	const psi = 3*5 + 5 + 5*2 + 2
	for _, unshard := range []bool{false, true} {
		err := parallel.Run(parallel.NewGroup(2), func(c parallel.Communicator) error {
			dev := cpu.New(c.Rank(), device.Options{})
			defer func() {
				if n := dev.LiveBlocks(); n != 0 {
					t.Errorf("rank %d leaks %v", c.Rank(), dev.Live())
				}
			}()
			model := mlp(nn.NewBuilder(dev, dtype.F32, uint64(10+c.Rank())), []int{3, 5, 2})
			defer nn.Release(model)
			d, err := parallel.NewDDP(c, model, parallel.DDPConfig{Zero: 3})
			if err != nil {
				return err
			}
			w := model.Params()[0].T
			if !w.Released() || dev.Stats().ByTag[device.Parameter].Current != 4*int64((psi+1)/2) {
				d.Release()
				return fmt.Errorf("after NewDDP: weight released %v, parameter bytes %d, want true and %d", w.Released(), dev.Stats().ByTag[device.Parameter].Current, 4*((psi+1)/2))
			}
			if err := d.Unshard(); err != nil {
				return err
			}
			if got := dev.Stats().ByTag[device.Communication].Current; got != 8*2+4*int64(d.FlatLen()) {
				err = fmt.Errorf("rank %d: unsharded communication bytes %d, want 8·2 + 4·Ψ′ = %d", c.Rank(), got, 8*2+4*d.FlatLen())
			}
			var vals []float64
			for _, p := range model.Params() {
				vals = append(vals, p.T.Float64s()...)
			}
			if fmt.Sprint(vals) != fmt.Sprint(initial[0]) {
				err = fmt.Errorf("rank %d: unsharded parameters %v, want rank 0's %v", c.Rank(), vals, initial[0])
			}
			if !unshard {
				d.Reshard()
			}
			d.Release()
			if unshard {
				if got := fmt.Sprint(w.Float64s()); got != fmt.Sprint(initial[0][:15]) {
					err = fmt.Errorf("after Release of an unsharded DDP the weight reads %s", got)
				}
				return err
			}
			if e := autograd.Try(func() { w.Float64s() }); e == nil || !strings.Contains(e.Error(), "unbound") {
				err = fmt.Errorf("reading a sharded weight after Release: %v, want an error saying it is unbound", e)
			}
			return err
		})
		if err != nil {
			t.Errorf("unshard before Release %v: %v", unshard, err)
		}
	}
}

// gptRun trains a tiny GPT (tied embeddings, so that the token table is
// used at both ends of the forward; optionally one block shared by both
// layers, and checkpointed blocks) on a global batch of 4 sequences for 3
// steps of SGD with momentum: with no DDP when ranks is 0, else on ranks ranks with the stage.
// It returns rank 0's parameters at the end, its peak bytes and the
// largest bucket's elements (0 without DDP).
func gptRun(t *testing.T, ranks, zero int, share, ckpt bool) ([]float64, bytesBy, int) {
	t.Helper()
	cfg := nn.GPTConfig{Vocab: 11, Context: 6, Layers: 2, Heads: 2, Width: 8, Bias: true, TieEmbeddings: true, ShareLayers: share}
	const batch, T = 4, 6
	tokens := make([]int64, 3*batch*(T+1))
	for i := range tokens {
		tokens[i] = int64((i*7 + i/5) % cfg.Vocab)
	}
	n := max(ranks, 1)
	var out []float64
	var pk bytesBy
	var largest int
	body := func(c parallel.Communicator, r int) error {
		dev := cpu.New(r, device.Options{})
		model, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F64, 5), "gpt", cfg, nil)
		if err != nil {
			return err
		}
		defer nn.Release(model)
		if ckpt {
			model.RunBlocks = func(ls []nn.Layer, x *autograd.Tensor) *autograd.Tensor { return checkpoint.Sequential(ls, 2, x) }
		}
		var opt optim.Optimizer
		var d *parallel.DDP
		if ranks == 0 {
			opt, err = optim.NewSGD(model.Params(), optim.SGDConfig{LR: 0.1, Momentum: 0.9})
		} else {
			if d, err = parallel.NewDDP(c, model, parallel.DDPConfig{Zero: zero, BucketBytes: 300 * 8}); err != nil {
				return err
			}
			defer d.Release()
			dev.ResetPeak()
			for _, u := range d.Buckets() {
				if r == 0 {
					largest = max(largest, u)
				}
			}
			opt, err = parallel.NewSGD(d, optim.SGDConfig{LR: 0.1, Momentum: 0.9})
		}
		if err != nil {
			return err
		}
		defer opt.Release()
		per := batch / n
		for step := range 3 {
			s := autograd.NewScope()
			var x, y []int64
			for b := r * per; b < (r+1)*per; b++ {
				seq := tokens[(step*batch+b)*(T+1):]
				x, y = append(x, seq[:T]...), append(y, seq[1:T+1]...)
			}
			logits := model.Forward(s.FromInt64s(dev, []int{per, T}, x))
			flat := logits.Reshape(-1, cfg.Vocab)
			loss := autograd.CrossEntropy(flat, s.FromInt64s(dev, []int{per * T}, y), autograd.CEOptions{})
			err := loss.Backward()
			s.Release()
			if err == nil {
				err = opt.Step()
			}
			opt.ZeroGrad()
			if err != nil {
				return err
			}
		}
		if r == 0 {
			pk = peaks(dev.Stats())
		}
		if d != nil {
			if err := d.Unshard(); err != nil {
				return err
			}
		}
		if r == 0 {
			for _, p := range model.Params() {
				out = append(out, p.T.Float64s()...)
			}
		}
		return nil
	}
	if ranks == 0 {
		if err := body(nil, 0); err != nil {
			t.Fatal(err)
		}
		return out, pk, 0
	}
	if err := parallel.Run(parallel.NewGroup(n), func(c parallel.Communicator) error { return body(c, c.Rank()) }); err != nil {
		t.Fatal(err)
	}
	return out, pk, largest
}

// TestStage3TrainsAGPTLikeOneRank trains a tiny GPT in F64 under stage 3
// on 2 and 4 ranks — its tied token table gathered again for the LM head
// and saved by reference there, the position table attached with
// Scope.Use, layer norms saving their weights — plain, with one block
// shared by both layers, and with checkpointed blocks. Every parameter
// must equal stage 2's bit for bit (the same arithmetic on the same
// values: only where the parameters live differs) and one device's
// trained on the whole batch to 1e-12. (SGD with momentum: Adam would
// turn the rounding of gradients that are zero in exact arithmetic into
// updates of a few 1e-12, at every stage alike.)
// Rank 0 must hold S parameter and gradient elements, and its
// communication peak lie between stage 2's and that plus one gathered
// bucket (the largest: N·⌈u/N⌉ elements); without checkpointing the
// bucket is gathered in backward while its own gradients are in flight,
// so the upper bound is reached. A block shared by both layers and
// checkpointed gets its gradients from the outer backward pass and from
// the recomputation's nested ones: the engine counts readiness across them.
func TestStage3TrainsAGPTLikeOneRank(t *testing.T) {
	for _, share := range []bool{false, true} {
		one, _, _ := gptRun(t, 0, 0, share, false)
		for _, n := range []int{2, 4} {
			stage2, pk2, largest := gptRun(t, n, 2, share, false)
			for _, ckpt := range []bool{false, true} {
				got, pk, _ := gptRun(t, n, 3, share, ckpt)
				name := fmt.Sprintf("shared %v, checkpointed %v, %d ranks", share, ckpt, n)
				gathered := 8 * int64(n*((largest+n-1)/n))
				if pk.param != pk2.grad || pk.grad != pk2.grad || pk.comm < pk2.comm || pk.comm > pk2.comm+gathered || !ckpt && pk.comm != pk2.comm+gathered {
					t.Errorf("%s: peak bytes %+v, stage 2's %+v: want parameter = gradient = %d, communication in [%d, %d]",
						name, pk, pk2, pk2.grad, pk2.comm, pk2.comm+gathered)
				}
				if i, d := closeTo(got, stage2, 0); i >= 0 {
					t.Errorf("%s: parameter %d = %v, stage 2's %v (relative difference %.3g)", name, i, got[i], stage2[i], d)
				}
				i, d := closeTo(got, one, 1e-12)
				if i >= 0 {
					t.Errorf("%s: parameter %d = %v, one rank %v (relative difference %.3g)", name, i, got[i], one[i], d)
				}
				t.Logf("%s: largest relative difference from one rank %.2g; communication peak %d, stage 2's %d + %d", name, d, pk.comm, pk2.comm, pk.comm-pk2.comm)
			}
		}
	}
}

// TestOneRankAloneCannotGather lets rank 1 return from Run while rank 0
// runs a forward of its stage-3 model without Unshard: the gather needs
// rank 1, so rank 0's forward must fail at once with an error saying so,
// not wait forever.
func TestOneRankAloneCannotGather(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		done <- parallel.Run(parallel.NewGroup(2), func(c parallel.Communicator) error {
			dev := cpu.New(c.Rank(), device.Options{})
			model := mlp(nn.NewBuilder(dev, dtype.F32, 1), []int{3, 4, 2})
			defer nn.Release(model)
			d, err := parallel.NewDDP(c, model, parallel.DDPConfig{Zero: 3})
			if err != nil {
				return err
			}
			defer d.Release()
			if c.Rank() != 0 {
				return nil
			}
			s := autograd.NewScope()
			defer s.Release()
			return autograd.Try(func() {
				s.NoGrad(func() { model.Forward(s.FromFloat32s(dev, []int{1, 3}, []float32{1, 2, 3})) })
			})
		})
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "rank 1 has returned from Run") || !strings.Contains(err.Error(), "Unshard") {
			t.Errorf("forward on rank 0 alone: %v, want an error saying rank 1 returned and naming Unshard", err)
		}
		t.Logf("%v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("rank 0's forward waits forever for rank 1's part of the gather")
	}
}
