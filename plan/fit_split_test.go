package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/dtype"
)

// worstPeak plans c and returns its largest rank's peak and allocated
// peak, and whether it ran out of memory.
func worstPeak(t *testing.T, c Config) (peak, allocated int64, oom bool) {
	t.Helper()
	p, err := Predict(c)
	if err != nil {
		t.Fatalf("plan tp %d pp %d dp %d batch %d: %v", c.TP, c.PP, c.Ranks, c.Batch, err)
	}
	for _, r := range p.Ranks {
		peak, allocated = max(peak, r.Total), max(allocated, r.AllocatedPeak)
	}
	return peak, allocated, p.OOM != nil
}

// TestFitSplitChoosesFewestModelRanks: with a capacity between the
// data-parallel layout's peak and a two-way split's, FitSplit chooses a
// layout that splits the model; its target batch plans within the
// capacity with the peak FitSplit reports, every planned layout with
// fewer model-parallel ranks runs out of memory at the target batch (each
// planned again here, on meta), among the layouts of as many
// model-parallel ranks none peaks lower, and the chosen layout's largest
// batch fits while one unit more does not.
func TestFitSplitChoosesFewestModelRanks(t *testing.T) {
	c := Config{Model: "gpt2", Seq: 32, Ranks: 8, Zero: 1, AMP: dtype.BF16}
	const target = 8
	_, dpAlloc, _ := worstPeak(t, layoutConfig(c, Layout{TP: 1, PP: 1, DP: 8}, target))
	_, ppAlloc, _ := worstPeak(t, layoutConfig(c, Layout{TP: 1, PP: 2, DP: 4}, target))
	if ppAlloc >= dpAlloc {
		t.Fatalf("two stages allocate %d bytes, data parallelism %d: want fewer", ppAlloc, dpAlloc)
	}
	capacity := (ppAlloc + dpAlloc) / 2
	began := time.Now()
	r, err := FitSplit(c, capacity, target)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%.2f s\n%s", time.Since(began).Seconds(), r)
	b := r.Best
	if b == nil || b.ModelRanks() < 2 {
		t.Fatalf("best %+v: want a split layout (data parallelism alone allocates %d bytes > capacity %d)", b, dpAlloc, capacity)
	}
	cc := layoutConfig(c, *b, b.TargetBatch)
	cc.Capacity = capacity
	if peak, _, oom := worstPeak(t, cc); oom || peak != b.TargetPeak || peak > capacity {
		t.Errorf("best tp %d pp %d dp %d at batch %d: peak %d (out of memory %v), fit reported %d, capacity %d",
			b.TP, b.PP, b.DP, b.TargetBatch, peak, oom, b.TargetPeak, capacity)
	}
	for _, l := range r.Layouts {
		if l.Skipped != "" {
			continue
		}
		lc := layoutConfig(c, l, l.TargetBatch)
		lc.Capacity = capacity
		_, _, oom := worstPeak(t, lc)
		if oom == l.TargetFits {
			t.Errorf("tp %d pp %d dp %d: target fits %v, but planned again out of memory %v", l.TP, l.PP, l.DP, l.TargetFits, oom)
		}
		if l.ModelRanks() < b.ModelRanks() && !oom {
			t.Errorf("tp %d pp %d dp %d fits batch %d with fewer model-parallel ranks than the chosen tp %d pp %d", l.TP, l.PP, l.DP, l.TargetBatch, b.TP, b.PP)
		}
		if l.ModelRanks() == b.ModelRanks() && l.TargetFits && l.TargetPeak < b.TargetPeak {
			t.Errorf("tp %d pp %d dp %d peaks at %d bytes, less than the chosen tp %d pp %d's %d", l.TP, l.PP, l.DP, l.TargetPeak, b.TP, b.PP, b.TargetPeak)
		}
	}
	// The chosen layout's largest batch fits, with the peak reported, and
	// one unit more does not.
	for _, tc := range []struct {
		batch int
		fits  bool
	}{{b.MaxBatch, true}, {b.MaxBatch + b.Unit, false}} {
		cc := layoutConfig(c, *b, tc.batch)
		cc.Capacity = capacity
		peak, _, oom := worstPeak(t, cc)
		if oom == tc.fits || tc.fits && peak != b.Peak {
			t.Errorf("chosen layout at batch %d: out of memory %v, peak %d; want fits=%v (reported max batch %d, peak %d)", tc.batch, oom, peak, tc.fits, b.MaxBatch, b.Peak)
		}
	}
	if b.MaxBatch < b.TargetBatch {
		t.Errorf("chosen layout: max batch %d below the target %d that fits", b.MaxBatch, b.TargetBatch)
	}
}

// TestFitSplitLayouts: the layouts of 12 ranks are every (tp, pp, dp)
// whose product is 12; those the model cannot take are skipped with the
// reason, not planned.
func TestFitSplitLayouts(t *testing.T) {
	ls := layouts(12)
	seen := map[[3]int]bool{}
	for _, l := range ls {
		if l.TP*l.PP*l.DP != 12 || seen[[3]int{l.TP, l.PP, l.DP}] {
			t.Errorf("layout %+v of 12 ranks", l)
		}
		seen[[3]int{l.TP, l.PP, l.DP}] = true
	}
	want := 0 // Σ over t | 12 of the divisors of 12/t
	for t := 1; t <= 12; t++ {
		if 12%t == 0 {
			for p := 1; p <= 12/t; p++ {
				if 12/t%p == 0 {
					want++
				}
			}
		}
	}
	if len(ls) != want {
		t.Errorf("%d layouts of 12 ranks, want %d", len(ls), want)
	}
	r, err := FitSplit(Config{Model: "transformer", Seq: 8, Ranks: 12}, 64<<20, 0) // 4 heads, 4 layers
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range r.Layouts {
		bad := 4%l.TP != 0 || l.PP > 4
		if bad != (l.Skipped != "") || bad && !strings.Contains(l.Skipped, "tp") && !strings.Contains(l.Skipped, "pp") {
			t.Errorf("tp %d pp %d dp %d: skipped %q", l.TP, l.PP, l.DP, l.Skipped)
		}
	}
	t.Logf("\n%s", r)
}

// TestFitSplitErrors: given TP or PP, a model that is not a GPT, or a
// capacity out of range, FitSplit fails before planning anything.
func TestFitSplitErrors(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		capa int64
		want string
	}{
		{Config{Model: "gpt2", Ranks: 4, TP: 2}, 1 << 30, "tp 2, pp 0 given"},
		{Config{Model: "small", Ranks: 4}, 1 << 30, "want a GPT"},
		{Config{Model: "gpt2", Ranks: 4}, 0, "capacity 0"},
		{Config{Model: "nope", Ranks: 4}, 1 << 30, "nope"},
	} {
		if _, err := FitSplit(tc.c, tc.capa, 0); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FitSplit(%+v, %d) = %v, want an error with %q", tc.c, tc.capa, err, tc.want)
		}
	}
}
