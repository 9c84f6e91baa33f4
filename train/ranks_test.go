package train

import (
	"flag"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

func TestCheckParallel(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ranks", "2", "--batch", "8"}, ""},
		{[]string{"--ranks", "4", "--zero", "2", "--offload", "--batch", "8"}, ""},
		{[]string{"--ranks", "3", "--batch", "8"}, "does not split over --ranks 3"},
		{[]string{"--ranks", "0"}, "--ranks 0: want ≥ 1"},
		{[]string{"--ranks", "2", "--zero", "3", "--offload", "--batch", "8"}, ""},
		{[]string{"--zero", "4"}, "want 0, 1, 2 or 3"},
		{[]string{"--zero", "-1"}, "want 0, 1, 2 or 3"},
		{[]string{"--offload"}, "--offload needs --zero 1, 2 or 3"},
		{[]string{"--zero", "1", "--save", "s"}, ""},
		{[]string{"--ranks", "2", "--mem-log", "m", "--batch", "8"}, "not available yet"},
	} {
		var c Common
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		c.Register(fs, Defaults{Steps: 1, Batch: 4, LR: 0.1})
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := c.Check("ranks", "zero", "offload")
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: Check = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// syncSpy records which micro-batches ran under NoSync.
type syncSpy struct{ inside, calls int }

func (s *syncSpy) NoSync(f func()) { s.calls++; s.inside++; defer func() { s.inside-- }(); f() }

// TestStepperRunsAllButTheLastMicroBatchUnderNoSync steps with 3
// micro-batches: the backward of the first two runs inside NoSync, the
// last one's outside.
func TestStepperRunsAllButTheLastMicroBatchUnderNoSync(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	w := autograd.Param(dev, dtype.F32, "w", 2)
	defer w.Release()
	opt, err := optim.NewSGD([]nn.Param{{Name: "w", T: w}}, optim.SGDConfig{LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Release()
	spy := &syncSpy{}
	var inside []int
	w.OnGradReady(func(*autograd.Tensor) { inside = append(inside, spy.inside) })
	st := &Stepper{Opt: opt, Accum: 3, Sync: spy}
	if _, _, err := st.Step(func(s *autograd.Scope, i int) *autograd.Tensor { return s.Use(w).Sum(false) }); err != nil {
		t.Fatal(err)
	}
	if spy.calls != 2 || len(inside) != 3 || inside[0] != 1 || inside[1] != 1 || inside[2] != 0 {
		t.Errorf("NoSync called %d times; backward inside NoSync per micro-batch: %v, want 2 and [1 1 0]", spy.calls, inside)
	}
}

// TestRanksDesc checks the run header's rank line: a range for several
// ranks, one device for one (not "1 ranks cpu:0…cpu:0").
func TestRanksDesc(t *testing.T) {
	r := &Rank{Via: "in-process group"}
	for _, c := range []struct {
		ranks int
		dev   string
		want  string
	}{
		{2, "cpu", "2 ranks cpu:0…cpu:1, ZeRO stage 1"},
		{1, "cpu", "1 rank cpu:0, ZeRO stage 1"},
		{3, "cuda:2", "3 ranks cuda:2…cuda:4, ZeRO stage 1"},
		{1, "cuda:1", "1 rank cuda:1, ZeRO stage 1"},
	} {
		cm := &Common{Ranks: c.ranks, Device: c.dev, Zero: 1}
		if got := cm.RanksDesc(r); got != c.want {
			t.Errorf("%d ranks on %s: %q, want %q", c.ranks, c.dev, got, c.want)
		}
	}
}
