package bench

import (
	"strings"
	"testing"
)

// roundFixture is one round of resnet18 amp bf16: headroom's timed steps
// all h, PyTorch's all t, headroom's peak peak.
func roundFixture(h, t float64, peak int64) *Result {
	steps := func(v float64) []float64 { return []float64{v, v, v, v, v} }
	return &Result{Threads: 2, Seconds: 10,
		Speed: []SpeedRow{{Model: "resnet18", Technique: "amp bf16", Params: 7, Batch: 32, StepSeconds: steps(h), SecondsPerStep: h, PeakBytes: peak}},
		Torch: &TorchResult{TorchEnv: TorchEnv{Threads: 2}, Rows: []TorchRow{{Model: "resnet18", Technique: "amp bf16", Params: 7, Batch: 32, Speed: true,
			Warmup: 2, StepSeconds: steps(t), SecondsPerStep: t}}}}
}

// TestMergeRounds: each side's time is the median of its rounds' medians,
// the ratio the median of the rounds' ratios (0.80 here, not the 0.75 of
// the medians), every round's ratio printed; the rounds' steps are all
// kept and the largest peak; the inputs are not modified.
func TestMergeRounds(t *testing.T) {
	rounds := []*Result{roundFixture(0.3, 0.25, 5), roundFixture(0.4, 0.5, 9), roundFixture(0.2, 0.4, 7)}
	m, err := MergeRounds(rounds)
	if err != nil {
		t.Fatal(err)
	}
	s, tr := m.Speed[0], m.Torch.Rows[0]
	if s.SecondsPerStep != 0.3 || tr.SecondsPerStep != 0.4 || len(s.StepSeconds) != 15 || len(tr.StepSeconds) != 15 || s.PeakBytes != 9 || m.Seconds != 30 {
		t.Errorf("merged: headroom %+v, torch %+v, seconds %v", s, tr, m.Seconds)
	}
	if s.SamplesPerSec != 32/0.3 || rounds[0].Speed[0].SecondsPerStep != 0.3 || len(rounds[0].Speed[0].RoundSeconds) != 0 {
		t.Errorf("samples/s %v; round 1 after merging %+v", s.SamplesPerSec, rounds[0].Speed[0])
	}
	out := SideBySide(m, m.Torch)
	for _, want := range []string{
		"| resnet18 | amp bf16 | 2 / 2 | 7 | 7 | 9 B | – | 0.300 | 0.400 (15) | 0.80 | – | – |",
		"resnet18 amp bf16: headroom ÷ torch by round 1.20, 0.80, 0.50 (s/step headroom 0.300, 0.400, 0.200, torch 0.250, 0.500, 0.400)",
		"3 rounds (--rounds)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("side by side lacks %q:\n%s", want, out)
		}
	}
	if one := SideBySide(rounds[0], rounds[0].Torch); strings.Contains(one, "by round") || strings.Contains(one, "rounds (--rounds)") {
		t.Errorf("one round printed rounds:\n%s", one)
	}
}

// TestMergeRoundsMismatch: rounds with other rows, or without PyTorch,
// are refused, naming the round.
func TestMergeRoundsMismatch(t *testing.T) {
	other := roundFixture(0.3, 0.3, 1)
	other.Speed[0].Technique = "plain"
	noTorch := roundFixture(0.3, 0.3, 1)
	noTorch.Torch = nil
	for _, c := range []struct {
		rounds []*Result
		want   string
	}{
		{nil, "no rounds"},
		{[]*Result{roundFixture(0.3, 0.3, 1), other}, "round 2: speed row 0 is resnet18 plain, want resnet18 amp bf16"},
		{[]*Result{roundFixture(0.3, 0.3, 1), noTorch}, "round 2: no PyTorch comparison"},
		{[]*Result{noTorch}, "round 1 has no PyTorch comparison"},
	} {
		if _, err := MergeRounds(c.rounds); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("MergeRounds: %v, want %q", err, c.want)
		}
	}
}
