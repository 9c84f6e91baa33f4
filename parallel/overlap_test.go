package parallel_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
)

// spy is a Communicator that reports when the first bucket's reduction
// starts.
type spy struct {
	parallel.Communicator
	once    sync.Once
	started chan struct{}
}

func (s *spy) AllReduce(t *autograd.Tensor, op parallel.Op) error {
	s.once.Do(func() { close(s.started) })
	return s.Communicator.AllReduce(t, op)
}

func (s *spy) ReduceScatter(dst, src *autograd.Tensor, op parallel.Op) error {
	s.once.Do(func() { close(s.started) })
	return s.Communicator.ReduceScatter(dst, src, op)
}

// TestReductionOverlapsBackward holds backward at the first layer's weight
// — the last gradient of the pass — until the last layer's bucket is being
// reduced: that happens only if reductions start while backward runs.
func TestReductionOverlapsBackward(t *testing.T) {
	for zero := range 4 {
		err := parallel.Run(parallel.NewGroup(2), func(c parallel.Communicator) error {
			sp := &spy{Communicator: c, started: make(chan struct{})}
			dev := cpu.New(c.Rank(), device.Options{})
			model := mlp(nn.NewBuilder(dev, dtype.F32, 1), []int{4, 8, 8, 2})
			defer nn.Release(model)
			first := model.Params()[0].T // fc0.weight: its gradient comes last
			held := false
			first.OnGradReady(func(*autograd.Tensor) { // before the DDP's own hook
				select {
				case <-sp.started:
					held = true
				case <-time.After(5 * time.Second):
				}
			})
			d, err := parallel.NewDDP(sp, model, parallel.DDPConfig{Zero: zero, BucketBytes: 80 * 4})
			if err != nil {
				return err
			}
			defer d.Release()
			if len(d.Buckets()) < 2 {
				return fmt.Errorf("buckets %v, want several", d.Buckets())
			}
			opt, err := parallel.NewSGD(d, optim.SGDConfig{LR: 0.1})
			if err != nil {
				return err
			}
			defer opt.Release()
			s := autograd.NewScope()
			x := s.FromFloat32s(dev, []int{2, 4}, []float32{1, 2, 3, 4, 5, 6, 7, 8})
			loss := autograd.CrossEntropy(model.Forward(x), s.FromInt64s(dev, []int{2}, []int64{0, 1}), autograd.CEOptions{})
			err = loss.Backward()
			s.Release()
			if err != nil {
				return err
			}
			if !held {
				return fmt.Errorf("zero %d: no reduction started before backward reached the first layer", zero)
			}
			if err := opt.Step(); err != nil {
				return err
			}
			opt.ZeroGrad()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
