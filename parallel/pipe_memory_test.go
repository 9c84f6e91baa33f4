package parallel_test

import (
	"testing"

	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/parallel"
)

// TestPipeMemory measures, on each stage of 4 over 8 micro-batches, the
// micro-batches in flight and the activation bytes they hold under both
// schedules: 1F1B's stage s holds P−s micro-batches at most (the last
// stage's backward follows each forward), GPipe's M,
// each exactly StageActivationBytes (the closed form) on every stage but
// the last; stage 0's peak under GPipe exceeds 1F1B's by (M−P) of them.
func TestPipeMemory(t *testing.T) {
	const stages, m = 4, 8
	stats := map[parallel.Schedule][]parallel.PipeStats{}
	for _, sched := range []parallel.Schedule{parallel.OneFOneB, parallel.GPipe} {
		ps := smallPipe(dtype.F32, stages, sched)
		ps.m, ps.steps = m, 2
		res, err := ps.pipeline()
		if err != nil {
			t.Fatalf("%s: %v", sched, err)
		}
		stats[sched] = res.stats
		split := parallel.DefaultSplit(ps.cfg.Layers, stages)
		for s, st := range res.stats {
			want := m
			if sched == parallel.OneFOneB {
				want = stages - s
			}
			if st.InFlight != want {
				t.Errorf("%s, stage %d: %d micro-batches in flight, want %d", sched, s, st.InFlight, want)
			}
			if s == stages-1 {
				continue
			}
			one := parallel.StageActivationBytes(ps.cfg, ps.batch, ps.seq, split[s], ps.dt, s == 0)
			if st.Held != int64(want)*one {
				t.Errorf("%s, stage %d: %d activation bytes held, want %d × %d = %d", sched, s, st.Held, want, one, int64(want)*one)
			}
			t.Logf("%s, stage %d: %d in flight × %d B = %d B held; peak %d B (activations %d B); bubble %.3f",
				sched, s, st.InFlight, one, st.Held, st.Peak, st.PeakActivation, st.Bubble)
		}
	}
	ps := smallPipe(dtype.F32, stages, parallel.GPipe)
	one := parallel.StageActivationBytes(ps.cfg, ps.batch, ps.seq, parallel.DefaultSplit(ps.cfg.Layers, stages)[0], ps.dt, true)
	g, f := stats[parallel.GPipe][0], stats[parallel.OneFOneB][0]
	if d := g.PeakActivation - f.PeakActivation; d != int64(m-stages)*one {
		t.Errorf("stage 0's activation peak: GPipe %d B, 1F1B %d B: %d B apart, want (M−P)·%d = %d", g.PeakActivation, f.PeakActivation, d, one, int64(m-stages)*one)
	}
	if want := parallel.Bubble(stages, m); g.Bubble != want || want != 3.0/11 {
		t.Errorf("bubble %v, want (P−1)/(M+P−1) = 3/11", g.Bubble)
	}
}
