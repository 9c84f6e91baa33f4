package autograd_test

import (
	"slices"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestRNGLogsNestAndRewind: a log started while another records on the
// same scope records the same draws and leaves the other recording (a
// step's log and a checkpoint's, say); RewindRNG then puts every generator
// back where it stood before its first logged draw, so the masks drawn
// again are the same bits.
func TestRNGLogsNestAndRewind(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	g1, g2 := autograd.NewGenerator(1), autograd.NewGenerator(2)
	s := autograd.NewScope()
	defer s.Release()
	x := s.FromFloat64s(dev, []int{10}, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}).Cast(dtype.F32)
	masks := func() [][]float32 {
		return [][]float32{
			autograd.Dropout(x, 0.5, g1, true).Float32s(),
			autograd.Dropout(x, 0.5, g2, true).Float32s(),
			autograd.Dropout(x, 0.5, g1, true).Float32s(),
		}
	}
	autograd.Dropout(x, 0.5, g1, true) // g1 has drawn before the logs start
	at1, at2 := g1.State(), g2.State()
	stopOuter := s.LogRNG()
	stopInner := s.Child().LogRNG() // a log on a child scope sees nothing of s's ops
	stopSame := s.LogRNG()
	first := masks()
	same := stopSame()
	child := stopInner()
	second := autograd.Dropout(x, 0.5, g2, true).Float32s()
	outer := stopOuter()
	if len(same) != 3 || len(outer) != 4 || len(child) != 0 {
		t.Fatalf("logged draws: %d by the nested log (want 3), %d by the outer one (want 4), %d by the child's (want 0)", len(same), len(outer), len(child))
	}
	autograd.RewindRNG(outer)
	if g1.State() != at1 || g2.State() != at2 {
		t.Fatalf("rewound: g1 %+v, g2 %+v; want %+v and %+v", g1.State(), g2.State(), at1, at2)
	}
	again := masks()
	for i := range first {
		if !slices.Equal(first[i], again[i]) {
			t.Errorf("mask %d after the rewind differs: %v, was %v", i, again[i], first[i])
		}
	}
	if got := autograd.Dropout(x, 0.5, g2, true).Float32s(); !slices.Equal(got, second) {
		t.Errorf("g2's second mask after the rewind: %v, was %v", got, second)
	}
}
