package parallel_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/parallel"
)

// TestPipeFailureStopsEveryStage: one stage of 4 fails in the middle of a
// step — the last stage's loss function fails on micro-batch 2 of step 1,
// or stage 1 runs out of memory — while the others wait for it in a
// send, a receive or the loss broadcast. Every rank must return an
// error within 10 s (the failed stage's own first, the others naming it),
// under both schedules.
func TestPipeFailureStopsEveryStage(t *testing.T) {
	cases := []struct {
		name  string
		rank  int
		setup func(*pipeSetup)
		want  func(error) bool
	}{
		{"loss fails", 3, func(ps *pipeSetup) {
			ps.failAt = func(r, step, i int) bool { return r == 3 && step == 1 && i == 2 }
		}, func(err error) bool { return strings.Contains(err.Error(), "Loss(2) returned nil") }},
		{"out of memory", 1, func(ps *pipeSetup) {
			ps.capOf = func(r int) int64 {
				if r == 1 {
					return 48 << 10 // its parameters fit (12.8 KiB), not a step's activations and gradients
				}
				return 0
			}
		}, autograd.IsOOM},
	}
	for _, c := range cases {
		for _, sched := range []parallel.Schedule{parallel.OneFOneB, parallel.GPipe} {
			ps := smallPipe(dtype.F32, 4, sched)
			ps.steps = 3
			c.setup(&ps)
			done := make(chan error, 1)
			start := time.Now()
			go func() { _, err := ps.pipeline(); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s, %s: no result within 10 s: a deadlock", c.name, sched)
			}
			name := fmt.Sprintf("%s, %s", c.name, sched)
			var re *parallel.RankError
			switch {
			case err == nil:
				t.Fatalf("%s: no error", name)
			case !errors.As(err, &re) || re.Rank != c.rank || !c.want(err):
				t.Errorf("%s: Run = %v, want rank %d's error first", name, err, c.rank)
			}
			for r := range 4 {
				if !strings.Contains(err.Error(), fmt.Sprintf("rank %d: ", r)) {
					t.Errorf("%s: rank %d returned no error:\n%v", name, r, err)
				}
			}
			if got := strings.Count(err.Error(), fmt.Sprintf("rank %d failed", c.rank)); got != 3 {
				t.Errorf("%s: %d of the other ranks' errors name rank %d, want 3:\n%v", name, got, c.rank, err)
			}
			t.Logf("%s: every rank returned in %v", name, time.Since(start).Round(time.Millisecond))
		}
	}
}

// fakeComm is a Communicator without point-to-point transfers.
type fakeComm struct{ parallel.Communicator }

// TestNewPipeChecks: bad configurations fail with an error naming the
// problem, before any work; DefaultSplit never gives stage 0 an extra
// block.
func TestNewPipeChecks(t *testing.T) {
	for _, c := range []struct {
		layers, stages int
		want           []int
	}{{4, 1, []int{4}}, {4, 2, []int{2, 2}}, {5, 2, []int{2, 3}}, {7, 4, []int{1, 2, 2, 2}}, {6, 4, []int{1, 2, 2, 1}}, {3, 4, nil}} {
		if got := parallel.DefaultSplit(c.layers, c.stages); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("DefaultSplit(%d, %d) = %v, want %v", c.layers, c.stages, got, c.want)
		}
	}
	ps := smallPipe(dtype.F32, 2, parallel.OneFOneB)
	comms := parallel.NewGroup(2)
	dev := cpu.New(0, device.Options{})
	g, err := nn.NewGPT(nn.NewDeferredBuilder(dev, dtype.F32, 7), "gpt", ps.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	good := parallel.PipeConfig{MicroBatches: 2, Batch: 2, Seq: 8}
	for _, c := range []struct {
		comm parallel.Communicator
		cfg  func(*parallel.PipeConfig)
		want string
	}{
		{fakeComm{comms[0]}, nil, "no point-to-point transfers"},
		{comms[0], func(c *parallel.PipeConfig) { c.MicroBatches = 0 }, "0 micro-batches"},
		{comms[0], func(c *parallel.PipeConfig) { c.Seq = 9 }, "want 1 ≤ T ≤ context 8"},
		{comms[0], func(c *parallel.PipeConfig) { c.Split = []int{4} }, "split [4] has 1 stages, the communicator 2 ranks"},
		{comms[0], func(c *parallel.PipeConfig) { c.Split = []int{4, 0} }, "gives stage 1 0 blocks"},
		{comms[0], func(c *parallel.PipeConfig) { c.Split = []int{2, 3} }, "holds 5 blocks, the model 4"},
		{comms[0], func(c *parallel.PipeConfig) { c.Schedule = 7 }, "unknown schedule 7"},
	} {
		cfg := good
		if c.cfg != nil {
			c.cfg(&cfg)
		}
		if _, err := parallel.NewPipe(c.comm, g, cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewPipe(%+v): %v, want an error containing %q", cfg, err, c.want)
		}
	}
	if live := dev.Live(); len(live) != 0 {
		t.Errorf("a refused NewPipe left blocks: %v", live)
	}
}
