package parallel_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/checkpoint"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/cuda"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// setup is one training run for the tests.
type setup struct {
	ranks   int  // 0: the single-device reference, without package parallel
	zero    int  // ZeRO stage
	offload bool // optimizer on a host device
	dt      dtype.DType
	widths  []int // MLP widths: in, hidden…, classes
	batch   int   // global batch per step
	steps   int
	accum   int
	clip    float64
	sgd     bool  // SGD with momentum instead of AdamW
	bucket  int64 // BucketBytes
	capOf   func(rank int) int64
	ckpt    bool                                              // checkpoint.Sequential over the layers (⌈√n⌉ segments)
	meta    bool                                              // meta devices: allocation only
	cuda    bool                                              // rank r on the emulated cuda:r
	nccl    bool                                              // with cuda: the ranks communicate through NCCL
	comm    func(parallel.Communicator) parallel.Communicator // wraps each rank's communicator
	lazy    bool                                              // build with nn.NewDeferredBuilder, passed to NewDDP
	initial bool                                              // keep the parameters' values after construction (result.init)
	amp     dtype.DType                                       // the forward's autocast dtype (F16: with a loss scaler)
}

// result is what each rank ended with.
type result struct {
	params []float64 // all parameters, in the model's order
	losses []float64
	dev    device.Stats
	host   device.Stats
	fresh  [device.NumTags]int64 // bytes by tag the device held before the model (cuda: its cuBLAS workspace; NCCL's)
	ddp    struct{ buckets []int }
	built  device.Stats // after the model was built and NewDDP returned
	init   []float64    // with setup.initial: the parameters after construction
	shard  int          // ShardLen
}

// mlp is Linear → tanh → … → Linear, named so that optimizer state can be
// told apart.
func mlp(b *nn.Builder, widths []int) *nn.Sequential {
	var ls []nn.Layer
	for i := 0; i+1 < len(widths); i++ {
		if i > 0 {
			ls = append(ls, nn.Func{Name: fmt.Sprintf("act%d", i), F: (*autograd.Tensor).Tanh})
		}
		ls = append(ls, nn.NewLinear(b, fmt.Sprintf("fc%d", i), widths[i], widths[i+1], true))
	}
	return nn.NewSequential(ls...)
}

// data returns steps global batches of inputs and labels.
func data(s setup) ([][]float32, [][]int64) {
	rng := rand.New(rand.NewPCG(42, 1))
	in, classes := s.widths[0], s.widths[len(s.widths)-1]
	xs, ys := make([][]float32, s.steps), make([][]int64, s.steps)
	for i := range xs {
		xs[i] = make([]float32, s.batch*in)
		for j := range xs[i] {
			xs[i][j] = float32(rng.NormFloat64())
		}
		ys[i] = make([]int64, s.batch)
		for j := range ys[i] {
			ys[i][j] = int64(rng.IntN(classes))
		}
	}
	return xs, ys
}

// rankDevice returns rank r's device for s.
func rankDevice(s setup, r int, capacity int64) (*device.Device, error) {
	o := device.Options{Capacity: capacity}
	switch {
	case s.meta:
		return meta.New(r, o), nil
	case s.cuda:
		return cuda.Open(r, o)
	}
	return cpu.New(r, o), nil
}

// run trains s and returns each rank's result (one for the reference).
func run(t *testing.T, s setup) []result {
	t.Helper()
	out, err := runErr(s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runErr is run returning the error of Run.
func runErr(s setup) ([]result, error) {
	n, k := max(s.ranks, 1), max(s.accum, 1)
	xs, ys := data(s)
	in := s.widths[0]
	m := s.batch / (n * k) // rows of one micro-batch of one rank
	out := make([]result, n)
	var gpus []*device.Device // NCCL's, opened before the group
	body := func(c parallel.Communicator, r int) (err error) {
		var capacity int64
		if s.capOf != nil {
			capacity = s.capOf(r)
		}
		dev, err := func() (*device.Device, error) {
			if gpus != nil {
				return gpus[r], nil // NCCL's, opened before the group (and closed after it)
			}
			return rankDevice(s, r, capacity)
		}()
		if err != nil {
			return err
		}
		before := dev.LiveBlocks() // cuda's cuBLAS workspace
		for tag, c := range dev.Stats().ByTag {
			out[r].fresh[tag] = c.Current
		}
		defer func() {
			if err == nil && dev.LiveBlocks() != before {
				err = fmt.Errorf("rank %d leaks %v", r, dev.Live())
			}
			if s.cuda && gpus == nil {
				if cerr := dev.Close(); err == nil {
					err = cerr
				}
			}
		}()
		var model *nn.Sequential
		b := nn.NewBuilder(dev, s.dt, 7)
		if s.lazy {
			b = nn.NewDeferredBuilder(dev, s.dt, 7)
		}
		if err := autograd.Try(func() { model = mlp(b, s.widths) }); err != nil {
			return err
		}
		defer nn.Release(model)
		if s.initial && s.ranks == 0 {
			out[r].init = values(model)
		}
		master := s.dt.IsLowPrecision()
		var opt optim.Optimizer
		var sync interface{ NoSync(func()) }
		var host *device.Device
		var d *parallel.DDP
		if s.ranks == 0 {
			if s.sgd {
				opt, err = optim.NewSGD(model.Params(), optim.SGDConfig{LR: 0.05, Momentum: 0.9, MasterWeights: master})
			} else {
				opt, err = optim.NewAdamW(model.Params(), optim.AdamConfig{LR: 0.01, MasterWeights: master})
			}
		} else {
			cfg := parallel.DDPConfig{Zero: s.zero, BucketBytes: s.bucket}
			if s.lazy {
				cfg.Builder = b
			}
			if s.offload {
				host = cpu.New(100+r, device.Options{})
				if s.meta {
					host = meta.New(100+r, device.Options{})
				}
				cfg.Host = host
			}
			if s.comm != nil {
				c = s.comm(c)
			}
			d, err = parallel.NewDDP(c, model, cfg)
			if err != nil {
				return err
			}
			defer d.Release()
			out[r].ddp.buckets = d.Buckets()
			out[r].built, out[r].shard = dev.Stats(), d.ShardLen()
			if s.initial {
				if err := d.Unshard(); err != nil {
					return err
				}
				out[r].init = values(model)
				d.Reshard()
			}
			dev.ResetPeak() // the model was briefly held twice while it moved into the flat buffer
			sync = d
			if s.sgd {
				opt, err = parallel.NewSGD(d, optim.SGDConfig{LR: 0.05, Momentum: 0.9, MasterWeights: master})
			} else {
				opt, err = parallel.NewAdamW(d, optim.AdamConfig{LR: 0.01, MasterWeights: master})
			}
			if err != nil {
				return err
			}
		}
		if err != nil {
			return err
		}
		defer opt.Release()
		st := &train.Stepper{Opt: opt, Sync: sync, Accum: k, Clip: s.clip, Scaler: amp.NewScaler(s.dt, amp.ScalerConfig{}), Autocast: s.amp}
		if s.amp == dtype.F16 {
			st.Scaler = amp.NewScaler(dtype.F16, amp.ScalerConfig{InitScale: 256})
		}
		for step := range s.steps {
			loss, _, err := st.Step(func(sc *autograd.Scope, i int) *autograd.Tensor {
				part := r*k + i
				x := sc.FromFloat32s(dev, []int{m, in}, xs[step][part*m*in:(part+1)*m*in])
				if s.dt != dtype.F32 {
					x = x.Cast(s.dt)
				}
				var logits *autograd.Tensor
				if s.ckpt {
					logits = checkpoint.Sequential(model.Layers, 0, x)
				} else {
					logits = model.Forward(x)
				}
				return autograd.CrossEntropy(logits, sc.FromInt64s(dev, []int{m}, ys[step][part*m:(part+1)*m]), autograd.CEOptions{})
			})
			if err != nil {
				return err
			}
			out[r].losses = append(out[r].losses, loss)
		}
		out[r].dev = dev.Stats()
		if host != nil {
			out[r].host = host.Stats()
		}
		if live := dev.Leaks(device.Parameter, device.Gradient, device.Optimizer, device.Communication); len(live) > 0 {
			return fmt.Errorf("rank %d: after training, live beside model states: %v", r, live)
		}
		if d != nil {
			if err := d.Unshard(); err != nil { // stage 3: every rank gathers the parameters to read them
				return err
			}
			defer d.Reshard()
		}
		out[r].params = values(model)
		return nil
	}
	if s.ranks == 0 {
		return out, body(nil, 0)
	}
	if s.nccl {
		return out, ncclRun(n, &gpus, func(c parallel.Communicator) error { return body(c, c.Rank()) })
	}
	return out, parallel.Run(parallel.NewGroup(n), func(c parallel.Communicator) error { return body(c, c.Rank()) })
}

// ncclRun opens cuda:0…cuda:n−1 into gpus, runs f on their NCCL group and
// closes the communicators, then the devices.
func ncclRun(n int, gpus *[]*device.Device, f func(parallel.Communicator) error) error {
	var errs []error
	for r := range n {
		d, err := cuda.Open(r, device.Options{})
		if err != nil {
			errs = append(errs, err)
			break
		}
		*gpus = append(*gpus, d)
	}
	if len(errs) == 0 {
		comms, err := parallel.NewNCCLGroup(*gpus)
		errs = append(errs, err)
		if err == nil {
			errs = append(errs, parallel.Run(comms, f))
			for _, c := range comms {
				errs = append(errs, c.(*parallel.NCCL).Close())
			}
		}
	}
	for _, d := range *gpus {
		errs = append(errs, d.Close())
	}
	return errors.Join(errs...)
}

// values returns all of m's parameters' values, in the model's order.
func values(m nn.Module) []float64 {
	var v []float64
	for _, p := range m.Params() {
		v = append(v, p.T.Float64s()...)
	}
	return v
}
