package plan

import (
	"strings"
	"testing"
)

// TestFitNeverRecommendsOther: at a target batch that QLoRA reaches and
// the full training does not, Fit lists QLoRA's batch but recommends
// nothing; a technique the fixed settings exclude (LoRA with
// amp-params) is listed as not searched instead of failing the search.
func TestFitNeverRecommendsOther(t *testing.T) {
	var plain, qlora, ampParams Technique
	for _, tq := range Techniques {
		switch tq.Name {
		case "plain":
			plain = tq
		case "qlora 16":
			qlora = tq
		case "amp bf16 + amp-params":
			ampParams = tq
		}
	}
	c := Config{Model: "transformer", Seq: 8}
	r, err := fit(c, 16<<20, 40, []Technique{plain, qlora}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := r.Options; o[0].TargetFits || !o[1].TargetFits || r.Best != nil {
		t.Errorf("target 40: plain fits %v, qlora fits %v, best %+v; want only qlora to fit and no recommendation", o[0].TargetFits, o[1].TargetFits, r.Best)
	}
	c.LoRA = 8
	r, err = fit(c, 16<<20, 0, []Technique{plain, ampParams}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := r.Options[1]; o.MaxBatch != 0 || !strings.Contains(o.Note, "not searched: plan: lora with amp-params") || r.Best == nil || r.Best.Technique != "plain" {
		t.Errorf("lora base: amp-params option %+v, best %+v; want it not searched and plain recommended", o, r.Best)
	}
}
