package train_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// sweepSetups are the runs whose every allocation a failed step is tried
// at: both models with and without accumulation and the loss scaler (f16
// parameters, f32 masters) on meta, whose allocator is the cpu's; autocast
// and checkpointing, whose casts and recomputations are leak paths of
// their own; and two cpu runs, where the values a failed step must leave
// alone are real: the GPT's failed in its first step (the optimizer's
// state is allocated then), the ResNet's in its second.
func sweepSetups() []setup {
	cpuSteps := map[string][]int{"gpt": {0}, "resnet": {1}}
	var cs []setup
	for _, m := range []string{"gpt", "resnet"} {
		for _, accum := range []int{1, 2} {
			for _, sc := range []bool{false, true} {
				cs = append(cs, setup{model: m, accum: accum, scaler: sc, steps: []int{1}})
			}
		}
		cs = append(cs, setup{model: m, accum: 1, autocast: dtype.BF16, steps: []int{1}},
			setup{model: m, accum: 2, ckpt: true, steps: []int{1}},
			setup{model: m, accum: 2, scaler: m == "resnet", onCPU: true, steps: cpuSteps[m]})
	}
	return cs
}

// TestFailedStepAtEveryAllocation runs each setup with the Stepper failing
// its step, in turn, at every allocation the step makes (device.InjectOOM:
// the n-th allocation is an out-of-memory error), and after each failure
// checks that the device holds exactly what it held before the step — the
// same live blocks by tag and creator, the same bytes — and that every
// parameter, buffer, optimizer tensor and scalar, the generator, the
// scaler and the step counter are bit for bit as they were (on meta the
// values are zeros; the memory is the point). The step then succeeds, and
// a twin run that never failed must have reached the very same state.
func TestFailedStepAtEveryAllocation(t *testing.T) {
	var points atomic.Int64
	t.Run("setups", func(t *testing.T) {
		for _, c := range sweepSetups() {
			t.Run(c.String(), func(t *testing.T) {
				t.Parallel()
				points.Add(int64(sweepAllocations(t, c)))
			})
		}
	})
	t.Logf("%d failure points checked in %d setups", points.Load(), len(sweepSetups()))
}

// sweepAllocations runs c's steps, failing each step of c.steps at every
// allocation first, and returns how many failures it checked.
func sweepAllocations(t *testing.T, c setup) int {
	twin, r := newRig(t, c), newRig(t, c)
	defer twin.release()
	defer r.release()
	points := 0
	for step := 0; step <= slices.Max(c.steps); step++ {
		a0 := twin.dev.Stats().Requested.Allocs
		want := twin.step(t)
		n := int(twin.dev.Stats().Requested.Allocs - a0)
		if slices.Contains(c.steps, step) {
			mem, st := memoryOf(r.dev), r.state()
			for k := 1; k <= n; k++ {
				r.dev.InjectOOM(k)
				_, _, err := r.st.Step(r.fwd)
				var oom *device.OOMError
				if !errors.As(err, &oom) || !errors.Is(err, device.ErrInjected) {
					t.Fatalf("step %d, allocation %d of %d: error %v, want the injected out-of-memory error", step, k, n, err)
				}
				if d := mem.diff(memoryOf(r.dev)); d != "" {
					t.Fatalf("step %d, failed at allocation %d of %d (%s for %s): the device holds %s", step, k, n,
						device.FormatBytes(oom.Requested), oom.Label.Creator(), d)
				}
				if d := stateDiff(st, r.state()); len(d) > 0 {
					t.Fatalf("step %d, failed at allocation %d of %d (%s): changed %v", step, k, n, oom.Label.Creator(), d)
				}
			}
			points += n
			t.Logf("step %d: failed at each of its %d allocations", step, n)
		}
		if got := r.step(t); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("step %d: loss %v, the run without failures %v", step, got, want)
		}
		if d := stateDiff(twin.state(), r.state()); len(d) > 0 {
			t.Errorf("step %d: differs from the run without failures in %v", step, d)
		}
	}
	return points
}

// TestFailedStepByCapacity sweeps the device's capacity densely from what
// the model and its optimizer hold up to what their first two steps need
// (every segment below 2 MiB is cut to its request, so the capacity
// decides at allocation granularity), each capacity on a fresh device, so
// that a step runs out of memory for real — the allocator's own decisions:
// cache flushes, segments cut near the limit — at many points; each failed
// step must leave the device and the state as above.
func TestFailedStepByCapacity(t *testing.T) {
	for _, c := range []setup{{model: "gpt", accum: 2}, {model: "resnet", accum: 2, scaler: true}, {model: "gpt", accum: 1, onCPU: true}} {
		probe := newRig(t, c)
		lo := probe.dev.Stats().Requested.Current
		probe.step(t)
		probe.step(t)
		hi := probe.dev.Stats().Requested.Peak * 3 / 2
		probe.release()
		const tries = 100
		failed, points := 0, map[[2]int64]bool{}
		for i := range tries {
			c.capacity = lo + (hi-lo)*int64(i)/tries
			if at, ok := failOnce(t, c); ok {
				failed++
				points[at] = true
			}
		}
		t.Logf("%v: capacities %d…%d B: %d of %d runs ran out of memory in a step, at %d distinct allocations", c, lo, hi, failed, tries, len(points))
		if len(points) < 10 {
			t.Errorf("%v: failures at only %d points: the sweep tests too little", c, len(points))
		}
	}
}

// failOnce runs c's first two steps until one fails, checks what the
// failure left, and returns the step and the allocation of it that failed.
func failOnce(t *testing.T, c setup) (at [2]int64, failed bool) {
	r, err := tryRig(c)
	if err != nil {
		return at, false // the model itself does not fit
	}
	defer r.release()
	for step := range 2 {
		mem, st := memoryOf(r.dev), r.state()
		a0 := r.dev.Stats().Requested.Allocs
		_, _, err := r.st.Step(r.fwd)
		if err == nil {
			continue
		}
		var oom *device.OOMError
		if !errors.As(err, &oom) {
			t.Fatalf("%v: %v", c, err)
		}
		if d := mem.diff(memoryOf(r.dev)); d != "" {
			t.Fatalf("%v: out of memory (%s for %s), and the device holds %s", c, device.FormatBytes(oom.Requested), oom.Label.Creator(), d)
		}
		if d := stateDiff(st, r.state()); len(d) > 0 {
			t.Fatalf("%v: the failed step changed %v", c, d)
		}
		return [2]int64{int64(step), r.dev.Stats().Requested.Allocs - a0}, true
	}
	return at, false
}

// TestRetriedStepIsBitIdentical: step 2 of a GPT with dropout and of a
// ResNet with BatchNorm runs out of memory once, in the backward pass of
// its second micro-batch — after both forwards have drawn dropout masks
// and updated the running statistics, and the first backward has added
// to the gradients — the capacity is raised and the step retried: every
// loss and, at the end, every parameter, BatchNorm statistic, optimizer
// tensor, the generator and the counters are bit for bit those of the run
// that never failed.
func TestRetriedStepIsBitIdentical(t *testing.T) {
	for _, c := range []setup{{model: "gpt", accum: 2, onCPU: true}, {model: "resnet", accum: 2, onCPU: true}} {
		c.capacity = 1 << 20 // under a segment: every one is cut to its request
		plain, r, probe := newRig(t, c), newRig(t, c), newRig(t, c)
		for step := range 4 {
			want := plain.step(t)
			if step == 2 {
				capacity := lateFailure(t, probe)
				r.dev.EmptyCache()
				r.dev.SetCapacity(capacity)
				_, _, err := r.st.Step(r.fwd)
				if !autograd.IsOOM(err) || !strings.Contains(err.Error(), "micro-batch 1 of step 2") {
					t.Fatalf("%v: step 2 at capacity %d: error %v, want out of memory in micro-batch 1", c, capacity, err)
				}
				t.Logf("%v: step 2 at capacity %d B: %s", c, capacity, strings.SplitN(err.Error(), ";", 2)[0])
				r.dev.SetCapacity(c.capacity)
			}
			if got := r.step(t); math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("%v: step %d loss %v, the run without a failure %v", c, step, got, want)
			}
			if step < 2 {
				probe.step(t)
			}
		}
		if d := stateDiff(plain.state(), r.state()); len(d) > 0 {
			t.Errorf("%v: after a retried step the run differs in %v", c, d)
		}
		plain.release()
		r.release()
		probe.release()
	}
}

// lateFailure returns the smallest capacity at which p's next step runs
// out of memory in the backward pass of its last micro-batch, trying
// capacities upwards from what p reserves (each failed try changes
// nothing).
func lateFailure(t *testing.T, p *rig) int64 {
	t.Helper()
	p.dev.EmptyCache()
	for capacity := p.dev.Stats().Reserved.Current; ; capacity += device.Granularity {
		p.dev.SetCapacity(capacity)
		_, _, err := p.st.Step(p.fwd)
		var oom *device.OOMError
		switch {
		case err == nil:
			t.Fatalf("the step fits %d B without failing in its last backward pass", capacity)
		case !errors.As(err, &oom):
			t.Fatal(err)
		case oom.Label.Phase == "backward" && strings.Contains(err.Error(), fmt.Sprintf("micro-batch %d of", p.st.Accum-1)):
			return capacity
		}
	}
}
