package parallel_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// counter counts a rank's gradient reductions.
type counter struct {
	parallel.Communicator
	n atomic.Int64
}

func (c *counter) AllReduce(t *autograd.Tensor, op parallel.Op) error {
	if op == parallel.Avg {
		c.n.Add(1)
	}
	return c.Communicator.AllReduce(t, op)
}

func (c *counter) ReduceScatter(dst, src *autograd.Tensor, op parallel.Op) error {
	c.n.Add(1)
	return c.Communicator.ReduceScatter(dst, src, op)
}

// TestNoSyncReducesOncePerStep trains 3 steps of 4 accumulated
// micro-batches: stages 0 and 1 reduce each bucket once per step (the
// micro-batches before the last run under NoSync), stages 2 and 3 once per
// micro-batch.
func TestNoSyncReducesOncePerStep(t *testing.T) {
	for zero := range 4 {
		buckets := make([]int, 2)
		counts := make([]int64, 2)
		err := parallel.Run(parallel.NewGroup(2), func(c parallel.Communicator) error {
			cnt := &counter{Communicator: c}
			dev := cpu.New(c.Rank(), device.Options{})
			model := mlp(nn.NewBuilder(dev, dtype.F32, 1), []int{4, 8, 8, 2})
			defer nn.Release(model)
			d, err := parallel.NewDDP(cnt, model, parallel.DDPConfig{Zero: zero, BucketBytes: 80 * 4})
			if err != nil {
				return err
			}
			defer d.Release()
			opt, err := parallel.NewSGD(d, optim.SGDConfig{LR: 0.1})
			if err != nil {
				return err
			}
			defer opt.Release()
			st := &train.Stepper{Opt: opt, Sync: d, Accum: 4}
			for range 3 {
				_, _, err := st.Step(func(s *autograd.Scope, _ int) *autograd.Tensor {
					x := s.FromFloat32s(dev, []int{1, 4}, []float32{1, -2, 3, float32(c.Rank())})
					return autograd.CrossEntropy(model.Forward(x), s.FromInt64s(dev, []int{1}, []int64{1}), autograd.CEOptions{})
				})
				if err != nil {
					return err
				}
			}
			buckets[c.Rank()], counts[c.Rank()] = len(d.Buckets()), cnt.n.Load()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := int64(3 * buckets[0])
		if zero >= 2 {
			want *= 4
		}
		if buckets[0] < 2 || counts[0] != want || counts[1] != want {
			t.Errorf("zero %d: %v reductions with %d buckets, want %d on each rank", zero, counts, buckets[0], want)
		}
	}
}

// TestUnusedParameterIsAnError leaves a layer out of the forward pass: the
// step fails on every rank with an error naming it, instead of reducing
// buckets that backward never completed.
func TestUnusedParameterIsAnError(t *testing.T) {
	for zero := range 4 {
		err := parallel.Run(parallel.NewGroup(2), func(c parallel.Communicator) error {
			dev := cpu.New(c.Rank(), device.Options{})
			model := mlp(nn.NewBuilder(dev, dtype.F32, 1), []int{4, 8, 2, 2})
			defer nn.Release(model)
			d, err := parallel.NewDDP(c, model, parallel.DDPConfig{Zero: zero})
			if err != nil {
				return err
			}
			defer d.Release()
			opt, err := parallel.NewSGD(d, optim.SGDConfig{LR: 0.1})
			if err != nil {
				return err
			}
			defer opt.Release()
			head := nn.NewSequential(model.Layers[:2]...) // fc0, act1: fc1 is not used
			s := autograd.NewScope()
			x := s.FromFloat32s(dev, []int{1, 4}, []float32{1, 2, 3, 4})
			err = head.Forward(x).Sum(false).Backward()
			s.Release()
			if err != nil {
				return err
			}
			err = opt.Step()
			opt.ZeroGrad()
			if err == nil || !strings.Contains(err.Error(), `parameter "fc1.weight" got no gradient`) {
				return fmt.Errorf("zero %d: step after a backward without fc1: %v", zero, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
