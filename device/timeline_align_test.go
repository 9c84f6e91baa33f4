package device_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/internal/memview/memviewtest"
)

// phasedRun records steps training steps on a meta device: forward
// activations, backward gradients, an optimizer update, and, in the steps
// listed in eval, an eval phase after the update. act sizes the activations.
func phasedRun(t *testing.T, steps int, act int64, eval map[int]bool) *device.Timeline {
	t.Helper()
	d := meta.New(0, device.Options{})
	d.MustAlloc(1<<16, device.Label{Tag: device.Parameter, Op: "init"})
	d.StartTimeline()
	lab := func(tag device.Tag, op, phase string) device.Label {
		return device.Label{Tag: tag, Op: op, Phase: phase}
	}
	for s := range steps {
		var acts []*device.Block
		for range 3 {
			acts = append(acts, d.MustAlloc(act, lab(device.Activation, "matmul", "forward")))
		}
		g := d.MustAlloc(1<<16, lab(device.Gradient, "grad", "backward"))
		for _, a := range acts {
			a.Release()
		}
		d.MustAlloc(1<<10, lab(device.Workspace, "adam", "optimizer")).Release()
		g.Release()
		if eval[s] {
			d.MustAlloc(act/2, lab(device.Activation, "matmul", "eval")).Release()
			d.MustAlloc(act/4, lab(device.Activation, "softmax", "eval")).Release()
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
// current one; a run that follows an optimizer run begins the next step;
// the key is "step S NAME #K", K counting NAME's runs within the step.
func phaseKeys(tl *device.Timeline) []phaseSeg {
	var segs []phaseSeg
	step, cur := 0, ""
	count := map[string]int{}
	for i, e := range tl.Events {
		if e.Kind != "alloc" || e.Phase == "" || e.Phase == cur {
			continue
		}
		if cur == "optimizer" {
			step, count = step+1, map[string]int{}
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
// second has an eval phase after steps 0 and 2) are aligned by step phase
// name and occurrence: each run's segments are the reference keying's,
// forward, backward and optimizer of step i start at the same x in both,
// and the first run's chart has a gap exactly at each eval.
func TestViewerCompareAlignsPhases(t *testing.T) {
	a := phasedRun(t, 4, 1<<18, nil)
	b := phasedRun(t, 4, 1<<17, map[int]bool{0: true, 2: true})
	ctx, stop := memviewtest.Open(t, writePage(t, t.TempDir(), a, b), 30*time.Second)
	defer stop()
	runs := memviewtest.Eval[[]pageRun](t, ctx, "window.memview.runs")
	keys := memviewtest.Eval[[]string](t, ctx, "window.memview.keys")
	unit := map[string][2]int{}
	for ri, tl := range []*device.Timeline{a, b} {
		want := phaseKeys(tl)
		got := runs[ri].Segs
		if len(got) != len(want) {
			t.Fatalf("run %d: the page has %d phase segments, want %d", ri, len(got), len(want))
		}
		for k, w := range want {
			if g := got[k]; g.Key != w.Key || g.A != w.A || g.B != w.B {
				t.Errorf("run %d segment %d: page %q [%d, %d), want %q [%d, %d)", ri, k, g.Key, g.A, g.B, w.Key, w.A, w.B)
			}
			u := unit[w.Key]
			u[ri] = got[k].U + 1 // 0: the run lacks the key
			unit[w.Key] = u
		}
	}
	var evals []int
	for k, u := range unit {
		switch {
		case u[0] > 0 && u[1] > 0 && u[0] != u[1]:
			t.Errorf("%s: x unit %d in the first run, %d in the second; want the same", k, u[0]-1, u[1]-1)
		case u[0] == 0:
			evals = append(evals, u[1]-1)
		}
	}
	if len(evals) != 2 || len(runs[0].Missing) != 2 || len(keys) != len(unit) {
		t.Fatalf("%d keys only the second run has (%v), first run's gaps %v, %d merged keys; want the 2 evals, gaps there, %d keys",
			len(evals), evals, runs[0].Missing, len(keys), len(unit))
	}
	for _, u := range runs[0].Missing {
		if k := keys[u]; unit[k][0] != 0 || k != fmt.Sprintf("step %s eval #0", k[5:6]) {
			t.Errorf("the first run has a gap at unit %d (%q), want gaps only at the second run's evals", u, k)
		}
	}
	saveShot(t, "headroom-view-align.png", memviewtest.Screenshot(t, ctx))
}
