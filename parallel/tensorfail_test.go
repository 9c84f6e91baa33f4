package parallel_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
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
			s.comm = func(c parallel.Communicator) parallel.Communicator { return &failing{Communicator: c, at: -1, calls: &calls} }
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
