package device_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/internal/memview/memviewtest"
)

// phases says what a phasedRun step does besides forward, backward and the
// optimizer update.
type phases struct {
	eval      map[int]bool // steps followed by an eval phase
	recompute bool         // a checkpointed backward: backward, recompute, backward
	optimizer bool         // whether the update allocates (with phase optimizer)
}

// phasedRun records steps training steps on a meta device: forward
// activations, backward gradients (recomputing one activation between two
// backward runs with ph.recompute), an optimizer workspace (ph.optimizer),
// and an eval phase after the steps in ph.eval. act sizes the activations.
func phasedRun(t *testing.T, steps int, act int64, ph phases) *device.Timeline {
	t.Helper()
	d := meta.New(0, device.Options{})
	d.MustAlloc(1<<16, device.Label{Tag: device.Parameter, Op: "init"})
	d.StartTimeline()
	alloc := func(n int64, tag device.Tag, op, phase string) *device.Block {
		return d.MustAlloc(n, device.Label{Tag: tag, Op: op, Phase: phase})
	}
	for s := range steps {
		var acts []*device.Block
		for range 3 {
			acts = append(acts, alloc(act, device.Activation, "matmul", "forward"))
		}
		g := alloc(1<<16, device.Gradient, "grad", "backward")
		for k, a := range acts {
			a.Release()
			if ph.recompute && k == 0 {
				alloc(act, device.Activation, "matmul", "recompute").Release()
				alloc(1<<12, device.Workspace, "matmul_backward", "backward").Release()
			}
		}
		if ph.optimizer {
			alloc(1<<10, device.Workspace, "adam", "optimizer").Release()
		}
		g.Release()
		if ph.eval[s] {
			alloc(act/2, device.Activation, "matmul", "eval").Release()
			alloc(act/4, device.Activation, "softmax", "eval").Release()
		}
	}
	return d.StopTimeline()
}

// phaseSeg is a run of events [a, b) under one step phase.
type phaseSeg struct {
	Key  string
	A, B int
}

// phaseKeys is the reference keying (written from the page's rule, not its
// code): a phase run begins at an alloc whose phase differs from the
// current one; each forward run after the first begins the next step; the
// key is "step S NAME #K", K counting NAME's runs within the step.
func phaseKeys(tl *device.Timeline) []phaseSeg {
	var segs []phaseSeg
	step, cur, forwards := 0, "", 0
	count := map[string]int{}
	for i, e := range tl.Events {
		if e.Kind != "alloc" || e.Phase == "" || e.Phase == cur {
			continue
		}
		if e.Phase == "forward" {
			if forwards++; forwards > 1 {
				step, count = step+1, map[string]int{}
			}
		}
		if len(segs) > 0 {
			segs[len(segs)-1].B = i
		}
		segs = append(segs, phaseSeg{Key: fmt.Sprintf("step %d %s #%d", step, e.Phase, count[e.Phase]), A: i})
		count[e.Phase]++
		cur = e.Phase
	}
	segs[len(segs)-1].B = len(tl.Events)
	return segs
}

// pageRun is what the page reports of one run's alignment.
type pageRun struct {
	Segs []struct {
		Key  string
		U    int
		A, B int
	}
	Missing []int
}

// TestViewerCompareAlignsPhases: two runs whose phase sequences differ (the
// second has an eval phase after steps 0 and 2, or recomputes during
// backward as a checkpointed run does) are aligned by step phase name and
// occurrence: each run's segments are the reference keying's, a key both
// runs have starts at the same x in both (forward of step i included), and
// each run's chart has a gap exactly at the keys only the other run has.
func TestViewerCompareAlignsPhases(t *testing.T) {
	const steps = 4
	for _, c := range []struct {
		name string
		a, b phases
	}{
		{"eval", phases{optimizer: true}, phases{optimizer: true, eval: map[int]bool{0: true, 2: true}}},
		{"recompute", phases{}, phases{recompute: true}},
	} {
		a, b := phasedRun(t, steps, 1<<18, c.a), phasedRun(t, steps, 1<<17, c.b)
		ctx, stop := memviewtest.Open(t, writePage(t, t.TempDir(), a, b), 30*time.Second)
		runs := memviewtest.Eval[[]pageRun](t, ctx, "window.memview.runs")
		keys := memviewtest.Eval[[]string](t, ctx, "window.memview.keys")
		checkAligned(t, c.name, []*device.Timeline{a, b}, runs, keys, steps)
		saveShot(t, "headroom-view-align-"+c.name+".png", memviewtest.Screenshot(t, ctx))
		stop()
	}
}

// checkAligned checks the page's alignment of two runs against phaseKeys.
func checkAligned(t *testing.T, name string, tls []*device.Timeline, runs []pageRun, keys []string, steps int) {
	t.Helper()
	unit := map[string][2]int{} // key → its unit in each run, +1 (0: absent)
	for ri, tl := range tls {
		want, got := phaseKeys(tl), runs[ri].Segs
		if len(got) != len(want) {
			t.Fatalf("%s: run %d: the page has %d phase segments, want %d", name, ri, len(got), len(want))
		}
		for k, w := range want {
			if g := got[k]; g.Key != w.Key || g.A != w.A || g.B != w.B {
				t.Errorf("%s: run %d segment %d: page %q [%d, %d), want %q [%d, %d)", name, ri, k, g.Key, g.A, g.B, w.Key, w.A, w.B)
			}
			u := unit[w.Key]
			u[ri] = got[k].U + 1
			unit[w.Key] = u
		}
	}
	if len(keys) != len(unit) {
		t.Errorf("%s: %d merged keys, want %d", name, len(keys), len(unit))
	}
	var only [2][]int // units of the keys only the other run has
	for _, k := range slices.Sorted(maps.Keys(unit)) {
		u := unit[k]
		switch {
		case u[0] > 0 && u[1] > 0 && u[0] != u[1]:
			t.Errorf("%s: %s: x unit %d in the first run, %d in the second; want the same", name, k, u[0]-1, u[1]-1)
		case u[0] == 0:
			only[0] = append(only[0], u[1]-1)
		case u[1] == 0:
			only[1] = append(only[1], u[0]-1)
		}
	}
	for ri := range 2 {
		slices.Sort(only[ri])
		if !slices.Equal(runs[ri].Missing, only[ri]) {
			t.Errorf("%s: run %d has gaps at units %v, want them at the other run's own keys %v", name, ri, runs[ri].Missing, only[ri])
		}
	}
	for s := range steps {
		if u := unit[fmt.Sprintf("step %d forward #0", s)]; u[0] == 0 || u[1] == 0 {
			t.Errorf("%s: step %d's forward is not in both runs: units %v", name, s, u)
		}
	}
}
