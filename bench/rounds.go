package bench

import (
	"fmt"
	"slices"
)

// MergeRounds merges the results of several rounds of the same speed
// models and techniques, each with its PyTorch comparison (Result.Torch),
// into one: each speed row's and PyTorch row's RoundSeconds are the
// rounds' medians in order, SecondsPerStep (and SamplesPerSec) their
// median, StepSeconds every timed step of every round, PeakBytes the
// largest peak. Alternating which side runs first in each round and
// pairing each round's two medians (SideBySide's ratio is the median of
// the rounds' ratios) keeps a drift of the machine's speed over minutes
// from favouring either side. The first round's environment, loss rows
// and Seconds (the sum of all) are kept. It fails unless every round has
// the same speed rows and PyTorch rows, in the same order.
func MergeRounds(rounds []*Result) (*Result, error) {
	if len(rounds) == 0 {
		return nil, fmt.Errorf("bench: no rounds to merge")
	}
	first := *rounds[0]
	if first.Torch == nil {
		return nil, fmt.Errorf("bench: round 1 has no PyTorch comparison")
	}
	torch := *first.Torch
	first.Torch = &torch
	first.Speed = slices.Clone(first.Speed)
	torch.Rows = slices.Clone(torch.Rows)
	for i, r := range rounds {
		if err := sameRows(&first, r); err != nil {
			return nil, fmt.Errorf("bench: round %d: %w", i+1, err)
		}
		if i > 0 {
			first.Seconds += r.Seconds
		}
	}
	for k := range first.Speed {
		s := &first.Speed[k]
		s.RoundSeconds, s.StepSeconds = nil, nil
		for _, r := range rounds {
			row := r.Speed[k]
			s.RoundSeconds = append(s.RoundSeconds, row.SecondsPerStep)
			s.StepSeconds = append(s.StepSeconds, row.StepSeconds...)
			s.PeakBytes = max(s.PeakBytes, row.PeakBytes)
		}
		s.SecondsPerStep = Median(s.RoundSeconds)
		s.SamplesPerSec = float64(s.Batch) / s.SecondsPerStep
	}
	for k := range torch.Rows {
		t := &torch.Rows[k]
		t.RoundSeconds, t.StepSeconds = nil, nil
		for _, r := range rounds {
			row := r.Torch.Rows[k]
			t.RoundSeconds = append(t.RoundSeconds, row.SecondsPerStep)
			t.StepSeconds = append(t.StepSeconds, row.StepSeconds...)
			t.PeakBytes = max(t.PeakBytes, row.PeakBytes)
		}
		t.SecondsPerStep = Median(t.RoundSeconds)
		t.SamplesPerSec = float64(t.Batch) / t.SecondsPerStep
	}
	return &first, nil
}

// sameRows checks that r has want's speed rows and PyTorch rows.
func sameRows(want, r *Result) error {
	if r.Torch == nil {
		return fmt.Errorf("no PyTorch comparison")
	}
	if len(r.Speed) != len(want.Speed) || len(r.Torch.Rows) != len(want.Torch.Rows) {
		return fmt.Errorf("%d speed and %d PyTorch rows, want %d and %d", len(r.Speed), len(r.Torch.Rows), len(want.Speed), len(want.Torch.Rows))
	}
	for k, s := range r.Speed {
		if w := want.Speed[k]; s.Model != w.Model || s.Technique != w.Technique {
			return fmt.Errorf("speed row %d is %s %s, want %s %s", k, s.Model, s.Technique, w.Model, w.Technique)
		}
	}
	for k, t := range r.Torch.Rows {
		if w := want.Torch.Rows[k]; t.Model != w.Model || t.Technique != w.Technique {
			return fmt.Errorf("PyTorch row %d is %s %s, want %s %s", k, t.Model, t.Technique, w.Model, w.Technique)
		}
	}
	return nil
}

// roundRatios returns headroom ÷ PyTorch in each round of a merged pair
// (nil unless both sides have the same two or more rounds).
func roundRatios(h, t []float64) []float64 {
	if len(h) < 2 || len(h) != len(t) {
		return nil
	}
	out := make([]float64, len(h))
	for i := range h {
		out[i] = ratio(h[i], t[i])
	}
	return out
}
