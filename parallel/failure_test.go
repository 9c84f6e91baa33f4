package parallel_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/parallel"
)

// TestOutOfMemoryOnOneRankStopsEveryRank gives rank 1 a device too small
// for a training step (the model and the DDP fit): rank 1 runs out of
// memory in its first step and every other rank — waiting for it in a
// collective, or about to — must end with an error naming rank 1, within
// a few seconds.
func TestOutOfMemoryOnOneRankStopsEveryRank(t *testing.T) {
	for _, n := range []int{2, 4} {
		for zero := range 4 {
			s := setup{ranks: n, zero: zero, dt: dtype.F32, widths: []int{6, 64, 64, 3}, batch: 256, steps: 2,
				capOf: func(r int) int64 {
					if r == 1 {
						return 80 << 10 // 2 and 4 ranks, ZeRO 0-3: the model and the DDP fit from 60 KiB, step 0 from 106 KiB
					}
					return 0
				}}
			done := make(chan error, 1)
			go func() { _, err := runErr(s); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%d ranks, zero %d: deadlock after rank 1 ran out of memory", n, zero)
			}
			name := fmt.Sprintf("%d ranks, zero %d", n, zero)
			var re *parallel.RankError
			switch {
			case err == nil:
				t.Fatalf("%s: no error with rank 1 out of memory", name)
			case !errors.As(err, &re) || re.Rank != 1 || !autograd.IsOOM(err):
				t.Errorf("%s: Run = %v, want rank 1's out-of-memory error first", name, err)
			case !strings.Contains(err.Error(), "micro-batch 0 of step 0"):
				t.Errorf("%s: rank 1 did not fail in its first step: %v", name, err)
			}
			for r := range n {
				if !strings.Contains(err.Error(), fmt.Sprintf("rank %d: ", r)) {
					t.Errorf("%s: rank %d returned no error:\n%v", name, r, err)
				}
			}
			if strings.Count(err.Error(), "rank 1 failed") != n-1 {
				t.Errorf("%s: the other ranks' errors do not name rank 1:\n%v", name, err)
			}
			if n == 4 && zero == 2 {
				t.Logf("%s:\n%v", name, err)
			}
		}
	}
}
