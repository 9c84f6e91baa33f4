package optim_test

import (
	"math"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

func TestClipGradNorm(t *testing.T) {
	d0, d1 := cpu.New(0, device.Options{}), cpu.New(1, device.Options{})
	// Gradients of mixed dtypes on two devices, one parameter without a
	// gradient and one buffer (skipped).
	a := param(d0, dtype.F32, "a", 0, 0, 0)
	b := param(d1, dtype.F64, "b", 0, 0)
	c := param(d0, dtype.F64, "c", 0)
	noGrad := param(d0, dtype.F32, "none", 0)
	buf := param(d0, dtype.F32, "buf", 0)
	ps := []nn.Param{{Name: "a", T: a}, {Name: "b", T: b}, {Name: "none", T: noGrad}, {Name: "c", T: c}, {Name: "buf", T: buf, Buffer: true}, {Name: "a again", T: a}}
	ga, gb, gc := []float64{0.3, -1.2, 2.5}, []float64{4.25, -0.5}, []float64{1.5}
	set := func() {
		setGrad(t, a, ga)
		setGrad(t, b, gb)
		setGrad(t, c, gc)
		setGrad(t, buf, []float64{100})
	}
	// The reference: the float64 norm of the concatenated gradients (a's
	// as F32 values).
	var ss float64
	for _, g := range [][]float64{round(dtype.F32, ga), gb, gc} {
		for _, x := range g {
			ss += x * x
		}
	}
	want := math.Sqrt(ss)

	// maxNorm above the norm: nothing changes.
	set()
	total, err := optim.ClipGradNorm(ps, want+1)
	if err != nil || math.Abs(total-want) > 1e-12*want {
		t.Fatalf("ClipGradNorm = %v, %v; want %v", total, err, want)
	}
	same(t, "a unclipped", a.Grad().Float64s(), round(dtype.F32, ga))
	same(t, "b unclipped", b.Grad().Float64s(), gb)

	// maxNorm below: every gradient scaled by maxNorm/(total+1e-6).
	d0.ResetPeak()
	before := d0.Stats().Requested.Current
	const maxNorm = 1.0
	total, err = optim.ClipGradNorm(ps, maxNorm)
	if err != nil || math.Abs(total-want) > 1e-12*want {
		t.Fatalf("ClipGradNorm = %v, %v; want %v", total, err, want)
	}
	coef := maxNorm / (want + 1e-6)
	scaled := func(g []float64) []float64 {
		out := make([]float64, len(g))
		for i, x := range g {
			out[i] = x * coef
		}
		return out
	}
	near(t, "a clipped", a.Grad().Float64s(), scaled(round(dtype.F32, ga)), 1e-6)
	near(t, "b clipped", b.Grad().Float64s(), scaled(gb), 1e-12)
	near(t, "c clipped", c.Grad().Float64s(), scaled(gc), 1e-12)
	same(t, "buffer gradient", buf.Grad().Float64s(), []float64{100})
	after, err := optim.ClipGradNorm(ps, math.Inf(1))
	if err != nil || math.Abs(after-maxNorm) > 1e-6 {
		t.Errorf("norm after clipping %v (%v), want %v", after, err, maxNorm)
	}
	// Memory: one F64 per gradient on d0 (a and c), freed.
	st := d0.Stats()
	if st.Requested.Current != before || st.Requested.Peak != before+16 || st.ByTag[device.Workspace].Current != 0 {
		t.Errorf("d0 current %d peak %d workspace %d; want %d, %d, 0", st.Requested.Current, st.Requested.Peak, st.ByTag[device.Workspace].Current, before, before+16)
	}
	t.Logf("norm %.6f clipped to %.6f", total, after)

	// A non-finite gradient: the norm is returned, nothing is scaled.
	set()
	setGrad(t, b, []float64{math.Inf(1), 1})
	total, err = optim.ClipGradNorm(ps, maxNorm)
	if err != nil || !math.IsInf(total, 1) {
		t.Errorf("ClipGradNorm with an Inf gradient = %v, %v; want +Inf, nil", total, err)
	}
	same(t, "a with Inf elsewhere", a.Grad().Float64s(), round(dtype.F32, ga))

	if _, err := optim.ClipGradNorm(ps, -1); err == nil || !strings.Contains(err.Error(), "maxNorm -1") {
		t.Errorf("ClipGradNorm(-1): %v", err)
	}
	if total, err := optim.ClipGradNorm([]nn.Param{{Name: "none", T: noGrad}}, 1); total != 0 || err != nil {
		t.Errorf("ClipGradNorm without gradients = %v, %v; want 0, nil", total, err)
	}
}

// halves is a Sharded optimizer whose rank holds half of the gradients:
// AllSum adds the other half's share, equal to this one's.
type halves struct {
	optim.Optimizer
	calls int
}

func (h *halves) AllSum(v float64) (float64, error) { h.calls++; return 2 * v, nil }

// TestClipGradNormOfShardedSumsOverRanks checks that a Sharded optimizer's
// gradients are clipped by the norm over all ranks: √(2·Σg²) here.
func TestClipGradNormOfShardedSumsOverRanks(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	p := param(dev, dtype.F64, "p", 0, 0)
	defer p.Release()
	opt, err := optim.NewSGD([]nn.Param{{Name: "p", T: p}}, optim.SGDConfig{LR: 1})
	if err != nil {
		t.Fatal(err)
	}
	setGrad(t, p, []float64{3, 4})
	sh := &halves{Optimizer: opt}
	norm, err := optim.ClipGradNormOf(sh, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := math.Sqrt(2 * 25)
	if math.Abs(norm-want) > 1e-12 || sh.calls != 1 {
		t.Errorf("norm %v after %d AllSum calls, want %v after 1", norm, sh.calls, want)
	}
	c := 1 / (want + 1e-6)
	if g := p.Grad().Float64s(); math.Abs(g[0]-3*c) > 1e-12 || math.Abs(g[1]-4*c) > 1e-12 {
		t.Errorf("clipped gradient %v, want %v", g, []float64{3 * c, 4 * c})
	}
	// Not sharded: the plain norm.
	setGrad(t, p, []float64{3, 4})
	if norm, _ := optim.ClipGradNormOf(opt, 10); norm != 5 {
		t.Errorf("norm %v of an unsharded optimizer, want 5", norm)
	}
}
