package plan

import "testing"

// TestFitActivationBudget: Fit's activation-budget option on a GPT reaches
// at least the batch of every technique it chooses among per block
// (plain keeps all; selective, offload), the batch after it does not fit,
// and a ResNet, whose FLOPs are not counted, gets no such option.
func TestFitActivationBudget(t *testing.T) {
	r, err := Fit(Config{Model: "transformer", Seq: 64}, 24<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Option{}
	for _, o := range r.Options {
		by[o.Technique] = o
	}
	b := by["activation budget"]
	for _, name := range []string{"plain", "selective", "offload activations"} {
		if b.MaxBatch < by[name].MaxBatch {
			t.Errorf("activation budget max batch %d < %s's %d", b.MaxBatch, name, by[name].MaxBatch)
		}
	}
	c := Config{Model: "transformer", Seq: 64, Capacity: 24 << 20}
	c.fitBudget = true
	if ok, _, err := budgetProbe(c)(b.MaxBatch + b.Unit); err != nil || ok {
		t.Errorf("batch %d after the max: fits %v, err %v", b.MaxBatch+b.Unit, ok, err)
	}
	t.Logf("24 MiB: activation budget max batch %d; plain %d, selective %d, offload %d", b.MaxBatch, by["plain"].MaxBatch, by["selective"].MaxBatch, by["offload activations"].MaxBatch)
	rr, err := Fit(Config{Model: "small"}, 64<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rr.Options {
		if o.Technique == "activation budget" {
			t.Errorf("ResNet got an activation-budget option: %+v", o)
		}
	}
}
