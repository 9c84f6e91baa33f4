package train_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// probed is an MLP with a probe parameter whose gradient is the data's
// coefficient vector c: the loss adds Σ probe·c, so an infinite element of
// c makes one element of one parameter's gradient infinite — on one
// rank's share only, under ZeRO.
type probed struct {
	*nn.Sequential
	probe *autograd.Tensor
}

func (m *probed) Params() []nn.Param {
	return append(m.Sequential.Params(), nn.Param{Name: "probe", T: m.probe})
}

// dpRank is what a rank ends with: its losses, every parameter's values
// (stage 3: gathered), the optimizer state, the scaler's skips and last
// overflow, and its gradient and undo-host peaks.
type dpRank struct {
	losses, params []float64
	state          map[string][]float64
	skipped        int
	overflow       string
	gradPeak       int64
	hostPeak       int64
	shareLen       int
}

const dpRanks, dpSteps, dpProbe = 2, 4, 8

// dpRun trains the probed F64 MLP for dpSteps steps of k micro-batches on
// dpRanks in-process ranks under ZeRO stage zero, with AdamW and an f16
// loss scaler (2^16), stepping inside backward or not. At step
// overflowStep (−1: none) rank 1's probe coefficient 0 is +Inf.
func dpRun(t *testing.T, zero, k int, inBackward bool, overflowStep int) []dpRank {
	t.Helper()
	out := make([]dpRank, dpRanks)
	var mu sync.Mutex
	err := parallel.Run(parallel.NewGroup(dpRanks), func(c parallel.Communicator) (err error) {
		r := c.Rank()
		dev := cpu.New(r, device.Options{})
		host := cpu.New(train.UndoHost+r, device.Options{})
		defer train.Close(dev, &err)
		b := nn.NewBuilder(dev, dtype.F64, 7)
		m := &probed{Sequential: nn.NewSequential(nn.NewLinear(b, "fc1", sibIn, sibHidden, true), nn.GELU("gelu"),
			nn.NewLinear(b, "fc2", sibHidden, sibHidden, true), nn.GELU("gelu2"),
			nn.NewLinear(b, "fc3", sibHidden, sibClasses, true)), probe: autograd.Param(dev, dtype.F64, "probe", dpProbe)}
		m.probe.SetFloat64s(make([]float64, dpProbe))
		defer nn.Release(m)
		d, err := parallel.NewDDP(c, m, parallel.DDPConfig{Zero: zero, BucketBytes: 8 * 300})
		if err != nil {
			return err
		}
		defer d.Release()
		opt, err := parallel.NewAdamW(d, optim.AdamConfig{LR: 0.01, WeightDecay: 0.01})
		if err != nil {
			return err
		}
		defer opt.Release()
		sc := amp.NewScaler(dtype.F16, amp.ScalerConfig{GrowthInterval: 100})
		st := &train.Stepper{Opt: opt, Sync: d, Accum: k, Scaler: sc, StepInBackward: inBackward, Host: host}
		rng := rand.New(rand.NewPCG(3, uint64(9+r)))
		per := sibRows / k
		x := make([]float64, dpSteps*sibRows*sibIn)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		y := make([]int64, dpSteps*sibRows)
		for i := range y {
			y[i] = int64(rng.IntN(sibClasses))
		}
		dev.ResetPeak()
		var res dpRank
		for step := range dpSteps {
			loss, _, err := st.Step(func(s *autograd.Scope, i int) *autograd.Tensor {
				at := step*sibRows + i*per
				xs := s.FromFloat64s(dev, []int{per, sibIn}, x[at*sibIn:(at+per)*sibIn])
				cs := make([]float64, dpProbe)
				for j := range cs {
					cs[j] = float64(j+1) * 1e-3
				}
				if step == overflowStep && r == 1 {
					cs[0] = math.Inf(1)
				}
				ce := autograd.CrossEntropy(m.Forward(xs), s.FromInt64s(dev, []int{per}, y[at:at+per]), autograd.CEOptions{})
				return ce.Add(s.Use(m.probe).Mul(s.FromFloat64s(dev, []int{dpProbe}, cs)).Sum(false))
			})
			if err != nil {
				return fmt.Errorf("step %d: %w", step, err)
			}
			res.losses = append(res.losses, loss)
		}
		res.gradPeak = dev.Stats().ByTag[device.Gradient].Peak
		res.hostPeak = train.Peaks(host.Stats()).Total
		res.skipped, res.overflow = sc.Skipped(), sc.LastOverflow()
		res.shareLen = d.ShardLen()
		if zero == 0 {
			res.shareLen = d.FlatLen()
		}
		res.state = map[string][]float64{}
		for n, x := range opt.State().Tensors {
			res.state[n] = x.Float64s()
		}
		if err := d.Unshard(); err != nil {
			return err
		}
		for _, p := range m.Params() {
			res.params = append(res.params, p.T.Float64s()...)
		}
		mu.Lock()
		out[r] = res
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatalf("zero %d k %d in backward %v: %v", zero, k, inBackward, err)
	}
	return out
}

// TestStepInBackwardDPBitIdentical: under data parallelism and ZeRO 1–3,
// with and without accumulation, stepping inside backward — each bucket's
// share updated as its reduction completes — gives every rank the losses,
// parameters and optimizer state of the normal step bit for bit, the same
// gradient peak (the DDP's buffers), and an undo host that peaks at the
// rank's share, its m and its v: 24·S bytes in F64.
func TestStepInBackwardDPBitIdentical(t *testing.T) {
	for zero := range 4 {
		for _, k := range []int{1, 2} {
			want, got := dpRun(t, zero, k, false, -1), dpRun(t, zero, k, true, -1)
			for r := range dpRanks {
				name := fmt.Sprintf("zero %d k %d rank %d", zero, k, r)
				dpSame(t, name, got[r], want[r])
				if got[r].hostPeak != int64(24*got[r].shareLen) || want[r].hostPeak != 0 {
					t.Errorf("%s: undo host peak %d B (normal step %d B), want 24·S = %d B", name, got[r].hostPeak, want[r].hostPeak, 24*got[r].shareLen)
				}
				if want[r].skipped != 0 || got[r].skipped != 0 {
					t.Errorf("%s: %d and %d skipped steps, want none", name, want[r].skipped, got[r].skipped)
				}
			}
		}
	}
}

// TestStepInBackwardDPOverflowOneRank: at step 2 one element of rank 1's
// probe gradient is infinite. Under ZeRO 1–3 that element is in one rank's
// share only — the other rank's share is finite and it has already
// stepped inside backward — yet every rank skips the step and rolls back:
// the run equals the normal step's bit for bit, each rank has one skip,
// and one of them learnt of the overflow from the other ("a parameter of
// another rank").
func TestStepInBackwardDPOverflowOneRank(t *testing.T) {
	for zero := range 4 {
		for _, k := range []int{1, 2} {
			want, got := dpRun(t, zero, k, false, 2), dpRun(t, zero, k, true, 2)
			other := 0
			for r := range dpRanks {
				name := fmt.Sprintf("zero %d k %d rank %d", zero, k, r)
				dpSame(t, name, got[r], want[r])
				if got[r].skipped != 1 || want[r].skipped != 1 {
					t.Errorf("%s: skipped %d steps (normal step %d), want 1", name, got[r].skipped, want[r].skipped)
				}
				if got[r].overflow == "(a parameter of another rank)" {
					other++
				}
			}
			if zero > 0 && other != 1 {
				t.Errorf("zero %d k %d: %d ranks learnt of the overflow from another rank, want 1 (overflows %q, %q)",
					zero, k, other, got[0].overflow, got[1].overflow)
			}
		}
	}
}

// dpSame checks got against want bit for bit.
func dpSame(t *testing.T, name string, got, want dpRank) {
	t.Helper()
	if !sameBits(got.losses, want.losses) {
		t.Errorf("%s: losses %v, want %v bit for bit", name, got.losses, want.losses)
	}
	if !sameBits(got.params, want.params) {
		t.Errorf("%s: parameters differ from the normal step's", name)
	}
	if len(got.state) != len(want.state) {
		t.Errorf("%s: %d state tensors, want %d", name, len(got.state), len(want.state))
	}
	for n, w := range want.state {
		if !sameBits(got.state[n], w) {
			t.Errorf("%s: optimizer state %s differs from the normal step's", name, n)
		}
	}
	if got.gradPeak != want.gradPeak {
		t.Errorf("%s: gradient peak %d B, want the normal step's %d B", name, got.gradPeak, want.gradPeak)
	}
}

// TestStepInBackwardDPFailureChangesNothing: rank 1's undo host holds 64
// bytes, so its first update inside backward fails under ZeRO 2; the
// group is aborted, every rank's Step returns an error, and every rank's
// parameters and optimizer bytes are what they were before the step.
func TestStepInBackwardDPFailureChangesNothing(t *testing.T) {
	err := parallel.Run(parallel.NewGroup(dpRanks), func(c parallel.Communicator) (err error) {
		r := c.Rank()
		dev := cpu.New(r, device.Options{})
		capacity := int64(0)
		if r == 1 {
			capacity = 64
		}
		host := cpu.New(train.UndoHost+r, device.Options{Capacity: capacity})
		b := nn.NewBuilder(dev, dtype.F64, 7)
		m := nn.NewSequential(nn.NewLinear(b, "fc1", sibIn, sibHidden, true), nn.GELU("gelu"), nn.NewLinear(b, "fc2", sibHidden, sibClasses, true))
		defer nn.Release(m)
		d, err := parallel.NewDDP(c, m, parallel.DDPConfig{Zero: 2, BucketBytes: 8 * 200})
		if err != nil {
			return err
		}
		defer d.Release()
		opt, err := parallel.NewAdamW(d, optim.AdamConfig{LR: 0.01})
		if err != nil {
			return err
		}
		defer opt.Release()
		st := &train.Stepper{Opt: opt, Sync: d, StepInBackward: true, Host: host}
		var before []float64
		for _, p := range m.Params() {
			before = append(before, p.T.Float64s()...)
		}
		_, _, serr := st.Step(func(s *autograd.Scope, _ int) *autograd.Tensor {
			xs := s.FromFloat64s(dev, []int{4, sibIn}, make([]float64, 4*sibIn))
			return autograd.CrossEntropy(m.Forward(xs), s.FromInt64s(dev, []int{4}, make([]int64, 4)), autograd.CEOptions{})
		})
		var after []float64
		for _, p := range m.Params() {
			after = append(after, p.T.Float64s()...)
		}
		switch {
		case serr == nil:
			t.Errorf("rank %d: the step succeeded; want an error", r)
		case !sameBits(after, before):
			t.Errorf("rank %d: parameters changed by a failed step (%v)", r, serr)
		case dev.Stats().ByTag[device.Optimizer].Current != 0 || host.Stats().ByTag[device.Optimizer].Current != 0:
			t.Errorf("rank %d: %d optimizer bytes on the device, %d on the host after a failed first step; want 0", r,
				dev.Stats().ByTag[device.Optimizer].Current, host.Stats().ByTag[device.Optimizer].Current)
		}
		if r == 1 {
			t.Logf("rank 1: %v", serr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
