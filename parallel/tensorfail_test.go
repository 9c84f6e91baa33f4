package parallel_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/parallel"
)

// failing is a communicator whose collective number at (counted from 0 on
// this rank) fails without joining the others, on rank 1 only; calls
// counts every rank's collectives.
type failing struct {
	parallel.Communicator
	at    int64
	calls *atomic.Int64
	mine  int64
}

var errInjected = errors.New("injected collective failure")

func (f *failing) fail() error {
	n := f.mine
	f.mine++
	f.calls.Add(1)
	if f.Rank() == 1 && n == f.at {
		return errInjected
	}
	return nil
}

func (f *failing) AllReduce(t *autograd.Tensor, op parallel.Op) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Communicator.AllReduce(t, op)
}

func (f *failing) AllGather(dst, src *autograd.Tensor) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Communicator.AllGather(dst, src)
}

func (f *failing) ReduceScatter(dst, src *autograd.Tensor, op parallel.Op) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Communicator.ReduceScatter(dst, src, op)
}

// TestTensorParallelFailingRankStopsEveryRank fails, on rank 1, each
// collective of the first training step in turn (forward and backward:
// the embedding's, the blocks', the cross-entropy's): every rank must
// return within 10 s, rank 1 with the injected error and the others with
// an error naming rank 1.
func TestTensorParallelFailingRankStopsEveryRank(t *testing.T) {
	for _, n := range []int{2, 4} {
		for _, seq := range []bool{false, true} {
			s := tpRun{ranks: n, seq: seq, dt: dtype.F32, cfg: tpSmall, batch: 2, steps: 1}
			var calls atomic.Int64
			s.comm = func(c parallel.Communicator) parallel.Communicator {
				return &failing{Communicator: c, at: -1, calls: &calls}
			}
			tpTrain(t, s)
			perStep := calls.Load() / int64(n)
			if perStep == 0 {
				t.Fatalf("%d ranks: no collectives in a step", n)
			}
			for at := range perStep {
				name := fmt.Sprintf("%d ranks, sequence %v, collective %d of %d", n, seq, at, perStep)
				s.comm = func(c parallel.Communicator) parallel.Communicator {
					return &failing{Communicator: c, at: at, calls: &atomic.Int64{}}
				}
				done := make(chan error, 1)
				go func() { _, err := tpTrainErr(s, nil); done <- err }()
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: deadlock after rank 1 failed", name)
				}
				var re *parallel.RankError
				switch {
				case err == nil:
					t.Fatalf("%s: no error", name)
				case !errors.As(err, &re) || re.Rank != 1 || !errors.Is(err, errInjected):
					t.Errorf("%s: Run = %v, want rank 1's injected error first", name, err)
				case strings.Count(err.Error(), "rank 1 failed") != n-1:
					t.Errorf("%s: the other ranks' errors do not name rank 1:\n%v", name, err)
				}
				if n == 4 && seq && at == perStep-1 {
					t.Logf("%s:\n%v", name, err)
				}
			}
		}
	}
}

// TestTensorParallelBadInput checks that configurations and batches the
// split cannot take fail on every rank with an error saying why, before
// any collective.
func TestTensorParallelBadInput(t *testing.T) {
	build := []struct {
		ranks int
		edit  func(*nn.GPTConfig)
		want  string
	}{
		{3, func(c *nn.GPTConfig) { c.Vocab = 15 }, "4 heads and vocabulary 15: want both divisible by the 3 ranks"},
		{2, func(c *nn.GPTConfig) { c.Vocab = 15 }, "vocabulary 15: want both divisible by the 2 ranks"},
		{2, func(c *nn.GPTConfig) { c.ShareLayers = true }, "ShareLayers is not supported"},
		{2, func(c *nn.GPTConfig) { c.Width = 10 }, "width 10 with 4 heads"},
		{2, func(c *nn.GPTConfig) { c.Dropout = 1 }, "dropout 1"},
	}
	for _, b := range build {
		cfg := tpSmall
		b.edit(&cfg)
		err := parallel.Run(parallel.NewGroup(b.ranks), func(c parallel.Communicator) error {
			dev := cpu.New(c.Rank(), device.Options{})
			_, err := parallel.NewTensorGPT(nn.NewBuilder(dev, dtype.F32, 1), "gpt", cfg, c, autograd.NewGenerator(1), parallel.TensorOptions{})
			return err
		})
		if err == nil || strings.Count(err.Error(), b.want) != b.ranks {
			t.Errorf("%+v on %d ranks: %v, want every rank to say %q", cfg, b.ranks, err, b.want)
		}
	}
	steps := []struct {
		seq      bool
		ids, tgt int64
		batch    []int
		want     string
	}{
		{true, 1, 1, []int{1, 3}, "tokens B·T 3: want a multiple of the 2"},
		{false, 16, 1, []int{2, 4}, "index 16 at 0 is outside [0, 16)"},
		{false, 1, -1, []int{2, 4}, "target -1 of row 0 is outside [0, 16)"},
	}
	for _, s := range steps {
		err := parallel.Run(parallel.NewGroup(2), func(c parallel.Communicator) error {
			dev := cpu.New(c.Rank(), device.Options{})
			g, err := parallel.NewTensorGPT(nn.NewBuilder(dev, dtype.F32, 1), "gpt", tpSmall, c, autograd.NewGenerator(1), parallel.TensorOptions{Sequence: s.seq})
			if err != nil {
				return err
			}
			defer nn.Release(g)
			sc := autograd.NewScope()
			return sc.Run(func() error {
				n := s.batch[0] * s.batch[1]
				ids, tgt := make([]int64, n), make([]int64, n)
				ids[0], tgt[0] = s.ids, s.tgt
				loss := g.Loss(g.Forward(sc.FromInt64s(dev, s.batch, ids)), sc.FromInt64s(dev, s.batch, tgt), autograd.CEOptions{})
				return loss.Backward()
			})
		})
		if err == nil || strings.Count(err.Error(), s.want) != 2 || strings.Contains(err.Error(), "aborted") {
			t.Errorf("%+v: %v, want both ranks to say %q themselves", s, err, s.want)
		}
	}
}
