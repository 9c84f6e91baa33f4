package plan

import (
	"testing"
)

// TestFitAgreesWithMeasurement: the predicted largest batch under a
// capacity equals the one found by running on cpu devices, and one batch
// more runs out of memory for real.
func TestFitAgreesWithMeasurement(t *testing.T) {
	c := Config{Model: "transformer", Seq: 8}
	const capacity = 16 << 20
	pred, err := Fit(c, capacity, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + pred.String())
	// Running every technique for real takes a while; three suffice.
	some := []Technique{Techniques[0], Techniques[2], Techniques[6]} // plain, amp-params, checkpoint √n
	meas, err := FitMeasured(c, capacity, 64, some, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := range []int{0, 2, 6} {
		if pred.Options[j] != meas.Options[i] {
			t.Errorf("%s: predicted %+v, measured %+v", pred.Options[j].Technique, pred.Options[j], meas.Options[i])
		}
	}
	// The plain answer runs; one more sample does not.
	b := pred.Options[0].MaxBatch
	for _, tc := range []struct {
		batch int
		fits  bool
	}{{b, true}, {b + 1, false}} {
		cc := c
		cc.Batch, cc.Capacity, cc.measure = tc.batch, capacity, true
		p, err := Predict(cc)
		if err != nil {
			t.Fatal(err)
		}
		if (p.OOM == nil) != tc.fits {
			t.Errorf("batch %d on cpu in %d bytes: out of memory %v, want fits=%v", tc.batch, capacity, p.OOM != nil, tc.fits)
		}
	}
	if pred.Best == nil {
		t.Errorf("no technique reaches batch 64 in %d bytes", capacity)
	}
}

// TestFitRanks: fit over data-parallel ranks searches multiples of the
// ranks (times the micro-batches) from the default target: a GPT's
// default batch is 1 per rank.
func TestFitRanks(t *testing.T) {
	c := Config{Model: "gpt2", Seq: 16, Ranks: 2}
	r, err := fit(c, 2500<<20, 0, []Technique{Techniques[0], Techniques[4]}, nil, nil) // plain, accum 4
	if err != nil {
		t.Fatalf("%s over %d ranks: %v", c.Model, c.Ranks, err)
	}
	for _, o := range r.Options {
		if o.MaxBatch%o.Unit != 0 || o.Unit%c.Ranks != 0 || o.TargetBatch%o.Unit != 0 || o.TargetBatch < r.Target {
			t.Errorf("%s %s: max batch %d, target %d, unit %d over %d ranks", c.Model, o.Technique, o.MaxBatch, o.TargetBatch, o.Unit, c.Ranks)
		}
	}
	if r.Target != 2 || r.Best == nil || r.Best.MaxBatch < 2 {
		t.Errorf("%s over %d ranks: target %d, want 2, fitting:\n%s", c.Model, c.Ranks, r.Target, r)
	}
	t.Logf("%s over %d ranks:\n%s", c.Model, c.Ranks, r)
}

// TestSearchNonMonotone: when a batch fits above one that does not, the
// search answers only what it ran: the largest batch it found fits and
// the next does not, and a target batch that does not fit is reported,
// not recommended.
func TestSearchNonMonotone(t *testing.T) {
	ran := map[int]bool{}
	fits := func(b int) (bool, int64, error) { // 1…10 and 14…20 fit
		ran[b] = true
		ok := b <= 10 || (b >= 14 && b <= 20)
		return ok, int64(b) * 100, nil
	}
	o, err := search(fits, 1, 12, -1)
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxBatch != 20 || o.Peak != 2000 || !ran[21] || o.TargetBatch != 12 || o.TargetFits || !ran[12] || o.Note == "" {
		t.Errorf("search = %+v (ran %v), want max batch 20 with 21 run, target 12 run and not fitting, with a note", o, ran)
	}
	t.Logf("%+v", o)
	// A target that fits is recommended with its own peak.
	if o, err = search(fits, 2, 6, -1); err != nil || o.MaxBatch != 20 || !o.TargetFits || o.TargetPeak != 600 || o.Note != "" {
		t.Errorf("search for 6 = %+v, %v; want target 6 fitting with peak 600", o, err)
	}
}

// TestSearchFromHint: a right hint costs two probes (it and the batch
// after it); a wrong one falls back to the bisection.
func TestSearchFromHint(t *testing.T) {
	var ran []int
	fits := func(b int) (bool, int64, error) { ran = append(ran, b); return b <= 37, int64(b), nil }
	for _, tc := range []struct{ hint, probes int }{{37, 2}, {36, 0}, {38, 0}, {0, 0}} {
		ran = nil
		o, err := search(fits, 1, 1, tc.hint)
		if err != nil || o.MaxBatch != 37 || o.Peak != 37 || (tc.probes > 0 && len(ran) != tc.probes+1) { // +1: the target
			t.Errorf("hint %d: %+v, %v after probes %v; want max batch 37", tc.hint, o, err, ran)
		}
	}
	ran = nil
	none := func(b int) (bool, int64, error) { ran = append(ran, b); return false, 0, nil }
	if o, err := search(none, 4, 4, 0); err != nil || o.MaxBatch != 0 || len(ran) != 1 || o.TargetFits {
		t.Errorf("nothing fits, hint 0: %+v, %v after probes %v", o, err, ran)
	}
}
