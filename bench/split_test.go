package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/plan"
)

// TestSplitRows: the tensor, pipeline and composed rows run on the
// transformer (not on the ResNet), each row's rank peaks are every rank's
// peak measured on cpu devices, the same bytes the planner predicts on
// meta for every rank, and the row's peak is the largest of them; the
// loss run trained on real data peaks at rank 0's bytes.
func TestSplitRows(t *testing.T) {
	techs := splitTechniques()
	res, err := Run(Config{Mode: Tiny, Models: []string{"resnet", "transformer"}, Techniques: techs})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Row{}
	for _, r := range res.Rows {
		if r.Model == "resnet" && r.Technique != "plain" {
			t.Errorf("resnet ran %s: a GPT-only row", r.Technique)
		}
		if r.Model == "transformer" {
			byName[r.Technique] = r
		}
	}
	setups, err := Config{Mode: Tiny, Models: []string{"transformer"}}.setups()
	if err != nil {
		t.Fatal(err)
	}
	for _, tq := range techs {
		r, ok := byName[tq.Name]
		if !ok || r.Note != "" {
			t.Errorf("%s: row %+v missing or failed", tq.Name, r)
			continue
		}
		c := setups[0].Plan
		tq.Apply(&c, nil)
		p, err := plan.Predict(c)
		if err != nil {
			t.Fatal(err)
		}
		var want []int64
		for _, rk := range p.Ranks {
			want = append(want, rk.Total)
		}
		if !slices.Equal(r.RankPeaks, want) || r.Peak.Total != slices.Max(want) || r.Ranks != len(want) {
			t.Errorf("%s: rank peaks %v (row peak %d over %d ranks), predicted on meta %v", tq.Name, r.RankPeaks, r.Peak.Total, r.Ranks, want)
		}
		if r.TrainSteps == 0 || r.SecondsPerStep <= 0 {
			t.Errorf("%s: loss run %d steps, %g s per step", tq.Name, r.TrainSteps, r.SecondsPerStep)
		}
		if line := mdRow(res.Markdown(), "transformer", tq.Name); !strings.HasSuffix(line, "| – |") || r.EvalMetric != "" {
			t.Errorf("%s: eval metric %q, Markdown row %q: want none evaluated (a split run does not validate), shown as –", tq.Name, r.EvalMetric, line)
		}
		t.Logf("%-40s ranks %d, rank peaks %v, %.4f s/step, loss %.4f, train peak equal %v, flags %v",
			tq.Name, r.Ranks, r.RankPeaks, r.SecondsPerStep, r.FinalLoss, r.SamePeak, r.Flags)
	}
}

// mdRow returns the Markdown table row of technique in model's table.
func mdRow(md, model, technique string) string {
	_, table, _ := strings.Cut(md, "**"+model+"**")
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "| "+technique+" |") {
			return line
		}
	}
	return ""
}
