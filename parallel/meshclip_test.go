package parallel_test

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
)

// sumRecorder is a one-device optimizer as an optim.Sharded whose AllSum
// returns v and records it: the last value of a step is the sum of
// squares that clipping took (the reference's norm).
type sumRecorder struct {
	optim.Optimizer
	last float64
}

func (r *sumRecorder) AllSum(v float64) (float64, error) {
	r.last = v
	return v, nil
}

// meshUpdate is how a mesh test's rank steps: the DDP's optimizer
// directly, or — clipping or loss scaling — through a MeshOptimizer (and
// an F16 amp.Scaler), with a forced overflow where overflow says.
type meshUpdate struct {
	inner    *parallel.Optimizer
	mo       *parallel.MeshOptimizer
	sc       *amp.Scaler
	pp       *parallel.Pipe
	overflow func(rank, step int) bool
}

// updater returns rank m's meshUpdate.
func (ms meshSetup) updater(m *parallel.Mesh, pp *parallel.Pipe, opt *parallel.Optimizer, rep []*autograd.Tensor) (*meshUpdate, error) {
	u := &meshUpdate{inner: opt, pp: pp, overflow: ms.overflow}
	if ms.clip == 0 && !ms.lossScale {
		return u, nil
	}
	mo, err := parallel.NewMeshOptimizer(m, opt, rep)
	if err != nil {
		return nil, err
	}
	mo.Clip = ms.clip
	u.mo = mo
	if ms.lossScale {
		u.sc = amp.NewScaler(dtype.F16, amp.ScalerConfig{})
	}
	return u, nil
}

// scale is the loss scale of the next step (0: none).
func (u *meshUpdate) scale() float64 {
	if u.sc == nil {
		return 0
	}
	return u.sc.Scale()
}

// step updates the rank's parameters after step's backward, recording
// the norm (0 when the scaler skipped the step) and the scale. A skipped
// step must leave the parameters and the optimizer state as they were.
func (u *meshUpdate) step(m *parallel.Mesh, step int, res *meshRank) error {
	switch {
	case u.mo == nil:
		return u.inner.Step()
	case u.sc == nil:
		err := u.mo.Step()
		res.norms = append(res.norms, u.mo.Norm())
		return err
	}
	if u.overflow != nil && u.overflow(m.World.Rank(), step) {
		g := u.inner.Params()[0].T.Grad()
		v := g.Float64s()
		v[len(v)/2] = math.Inf(1)
		g.SetFloat64s(v)
	}
	before := u.snapshot()
	stepped, err := u.sc.Step(u.mo)
	if err != nil {
		return err
	}
	if err := u.sc.Update(); err != nil {
		return err
	}
	res.scales = append(res.scales, u.sc.Scale())
	if stepped {
		res.norms = append(res.norms, u.mo.Norm())
		return nil
	}
	res.norms = append(res.norms, 0)
	if after := u.snapshot(); after != before {
		return fmt.Errorf("rank %d, skipped step %d: parameters and optimizer state changed (%s)", m.World.Rank(), step, diffAt(before, after))
	}
	return nil
}

// snapshot writes the stage's parameters and the optimizer's state.
func (u *meshUpdate) snapshot() string {
	var s string
	for _, p := range u.pp.Params() {
		s += fmt.Sprint(p.Name, p.T.Float64s())
	}
	st := u.inner.State()
	names := slices.Sorted(maps.Keys(st.Tensors))
	for _, name := range names {
		s += fmt.Sprint(name, st.Tensors[name].Float64s())
	}
	return s + fmt.Sprint(st.Scalars)
}

// diffAt says where two snapshots first differ.
func diffAt(a, b string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("at byte %d: %.40q vs %.40q", i, a[i:], b[i:])
		}
	}
	return "in length"
}

// TestMeshClipMatchesOneDevice clips by the global gradient norm
// (MeshOptimizer) on TP2 (with and without sequence parallelism), PP2,
// DP2×TP2 under ZeRO 0 and DP2×TP2×PP2 under ZeRO 1 and under ZeRO 2 with
// sequence parallelism, in F64, with a clip below every step's norm: every rank's norm
// of every step must be one device's (so the clip factor is), and the
// losses and parameters too, within 1e-12 relative — the parameters of
// the data-parallel meshes within 1e-11: their gradient mean adds the
// copies' sums ((g0+g1)/2, one device every micro-batch's g/8 in turn),
// which after 6 AdamW steps moved a weight by 1.4e-12 of its size
// (measured), clipping or not.
func TestMeshClipMatchesOneDevice(t *testing.T) {
	for _, tc := range []struct {
		shape    parallel.MeshShape
		zero     int
		sequence bool
	}{
		{parallel.MeshShape{1, 2, 1}, 1, false}, {parallel.MeshShape{1, 2, 1}, 1, true}, {parallel.MeshShape{1, 1, 2}, 1, false},
		{parallel.MeshShape{2, 2, 1}, 0, false}, {parallel.MeshShape{2, 2, 2}, 1, false}, {parallel.MeshShape{2, 2, 2}, 2, true},
	} {
		ms := smallMesh(dtype.F64, tc.shape)
		ms.zero, ms.steps, ms.clip, ms.sequence = tc.zero, 6, 0.05, tc.sequence
		want, shapes := ms.reference(t)
		got, err := ms.run()
		if err != nil {
			t.Fatalf("%v: %v", tc.shape, err)
		}
		worst := 0.0
		for r, g := range got {
			for step, n := range g.norms {
				w := want.norms[step]
				if w <= ms.clip {
					t.Fatalf("step %d: one device's norm %v does not exceed the clip %v", step, w, ms.clip)
				}
				worst = math.Max(worst, math.Abs(n-w)/w)
				if math.Abs(n-w) > 1e-12*w {
					t.Errorf("%v rank %d step %d: gradient norm %v, one device %v", tc.shape, r, step, n, w)
				}
			}
		}
		prel := 1e-12
		if tc.shape.Data > 1 {
			prel = 1e-11
		}
		ld, pd, err := ms.compare(got, want, shapes, 1e-12, prel)
		if err != nil {
			t.Errorf("%v ZeRO %d: %v", tc.shape, tc.zero, err)
		}
		t.Logf("%v ZeRO %d sequence parallel %v: norms %.4g → %.4g (clip %g), largest relative difference: norms %.2g, losses %.2g, parameters %.2g",
			tc.shape, tc.zero, tc.sequence, want.norms[0], want.norms[len(want.norms)-1], ms.clip, worst, ld, pd)
	}
}

// TestMeshLossScaling runs F16 autocast with dynamic loss scaling on
// DP2×TP2×PP2 (ZeRO 1) and TP2×PP2: the losses match one device's
// scaled run within 2e-3 relative (F16 rounding of the partial sums in
// another order) and every rank keeps one device's scale. Then one
// rank's gradients get an infinity in step 2: every rank must skip that
// step (its parameters and optimizer state unchanged — checked by the
// rank, bit for bit), halve its scale and step again from step 3.
func TestMeshLossScaling(t *testing.T) {
	for _, shape := range []parallel.MeshShape{{2, 2, 2}, {1, 2, 2}} {
		ms := smallMesh(dtype.F32, shape)
		ms.steps, ms.autocast, ms.lossScale = 6, dtype.F16, true
		want, _ := ms.reference(t)
		got, err := ms.run()
		if err != nil {
			t.Fatalf("%v: %v", shape, err)
		}
		for r, g := range got {
			for step := range g.losses {
				if g.scales[step] != want.scales[step] {
					t.Errorf("%v rank %d step %d: scale %v, one device %v", shape, r, step, g.scales[step], want.scales[step])
				}
			}
		}
		ld := meanLossDiff(ms, got, want)
		if ld > 2e-3 {
			t.Errorf("%v: losses differ from one device's by %.2g relative, want ≤ 2e-3", shape, ld)
		}
		forced := shape.Size() - 1
		ms.overflow = func(rank, step int) bool { return rank == forced && step == 2 }
		got, err = ms.run()
		if err != nil {
			t.Fatalf("%v, an overflow on rank %d: %v", shape, forced, err)
		}
		for r, g := range got {
			if g.norms[2] != 0 || g.norms[3] == 0 || g.scales[2] != want.scales[1]/2 || g.scales[5] != g.scales[2] {
				t.Errorf("%v rank %d, an overflow on rank %d in step 2: norms %v, scales %v: want step 2 skipped and the scale halved from %v",
					shape, r, forced, g.norms, g.scales, want.scales[1])
			}
		}
		t.Logf("%v: scale %v, losses %.4f → %.4f, largest relative loss difference %.2g; the overflow on rank %d: scales %v",
			shape, want.scales[0], want.losses[0], want.losses[len(want.losses)-1], ld, forced, got[0].scales)
	}
}

// meanLossDiff returns the largest relative difference of the data
// ranks' mean loss from one device's.
func meanLossDiff(ms meshSetup, got []meshRank, want pipeResult) (diff float64) {
	s := ms.shape
	for i, w := range want.losses {
		var sum float64
		for dp := range s.Data {
			sum += got[s.Rank(dp, 0, s.Pipe-1)].losses[i]
		}
		diff = math.Max(diff, math.Abs(sum/float64(s.Data)-w)/w)
	}
	return diff
}
