package bench

import "testing"

// TestSpeedTechniquesFollowTechniques: --techniques limits the speed rows
// and PyTorch's techniques alike (plain always runs), so
// `bench --torch --techniques plain` times F32 on both sides only.
func TestSpeedTechniquesFollowTechniques(t *testing.T) {
	all := Techniques()
	byName := func(name string) Technique {
		for _, x := range all {
			if x.Name == name {
				return x
			}
		}
		t.Fatalf("no technique %q", name)
		return Technique{}
	}
	for _, tc := range []struct {
		techs []Technique
		torch string
		bf16  bool
	}{
		{nil, "plain,amp bf16,checkpoint √n", true},
		{[]Technique{byName("plain")}, "plain", false},
		{[]Technique{byName("amp bf16")}, "plain,amp bf16", true},
		{[]Technique{byName("checkpoint √n"), byName("ranks 2")}, "plain,checkpoint √n", false},
	} {
		c := Config{Techniques: tc.techs}
		if got := c.torchTechniques(); got != tc.torch {
			t.Errorf("%d techniques: PyTorch's --techniques=%q, want %q", len(tc.techs), got, tc.torch)
		}
		if c.wants("amp bf16") != tc.bf16 || !c.wants("plain") {
			t.Errorf("%d techniques: wants amp bf16 %v, plain %v; want %v, true", len(tc.techs), c.wants("amp bf16"), c.wants("plain"), tc.bf16)
		}
	}
}
