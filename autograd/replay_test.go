package autograd_test

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestOutputLogReplaysLinear: a replaying scope hands Linear the logged
// output (same storage, same values) instead of computing it, skips calls
// whose entry is nil, and refuses a call of another shape.
func TestOutputLogReplaysLinear(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	ops := map[string]bool{"linear": true}
	s := autograd.NewScope()
	defer s.Release()
	x := s.Full(dev, dtype.F32, 0.5, 3, 4)
	w := s.Full(dev, dtype.F32, 0.25, 2, 4)
	log := autograd.NewOutputLog(ops)
	s.SetOutputLog(log)
	y1 := autograd.Linear(x, w, nil)
	y2 := autograd.Linear(x, w, nil)
	s.SetOutputLog(nil)
	logged := log.Outputs()
	if len(logged) != 2 || logged[0].Block() != y1.Block() || log.Modified(0) {
		t.Fatalf("logged %d outputs, first on y1's block %v, modified %v; want 2, true, false", len(logged), logged[0].Block() == y1.Block(), log.Modified(0))
	}
	logged[0].Fill(7) // a replay must hand back the logged storage, not recompute
	if !log.Modified(0) {
		t.Fatal("Modified(0) false after an in-place write")
	}
	s.SetOutputLog(autograd.ReplayLog(ops, []*autograd.Tensor{logged[0], nil}))
	r1 := autograd.Linear(x, w, nil)
	r2 := autograd.Linear(x, w, nil)
	s.SetOutputLog(nil)
	if r1.Block() != logged[0].Block() || r1.Float32s()[0] != 7 {
		t.Errorf("replayed call 0: own block %v, value %v; want the logged block, 7", r1.Block() != logged[0].Block(), r1.Float32s()[0])
	}
	if r2.Block() == logged[1].Block() || r2.Float32s()[0] != y2.Float32s()[0] {
		t.Errorf("nil entry: reused the log %v, value %v; want computed %v", r2.Block() == logged[1].Block(), r2.Float32s()[0], y2.Float32s()[0])
	}
	s.SetOutputLog(autograd.ReplayLog(ops, []*autograd.Tensor{logged[1]}))
	err := autograd.Try(func() { autograd.Linear(x.Slice(0, 0, 2), w, nil) })
	if err == nil || !strings.Contains(err.Error(), "replay") {
		t.Errorf("replay of another shape: err %v, want a replay error", err)
	}
	s.SetOutputLog(nil)
	for _, l := range logged {
		l.Release()
	}
}

// TestOutputLogReplaysProducts: MatMul, Conv2d and attention log their
// outputs (attention two entries: output and log-sum-exp) and a replay
// hands the logged storage back without computing (an entry overwritten
// with 7 comes back as 7), while backward's own products, outside the log,
// still compute.
func TestOutputLogReplaysProducts(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	a := s.Full(dev, dtype.F32, 0.5, 2, 3, 4)
	b := s.Full(dev, dtype.F32, 0.25, 4, 5)
	x := s.Full(dev, dtype.F32, 0.5, 1, 2, 5, 5)
	w := s.Full(dev, dtype.F32, 0.1, 3, 2, 3, 3)
	q := s.Full(dev, dtype.F32, 0.3, 1, 2, 4, 8)
	calls := []struct {
		op string
		n  int
		f  func() *autograd.Tensor
	}{
		{"matmul", 1, func() *autograd.Tensor { return a.MatMul(b) }},
		{"conv2d", 1, func() *autograd.Tensor {
			return autograd.Conv2d(x, w, nil, autograd.ConvOptions{Padding: [2]int{1, 1}})
		}},
		{"scaled_dot_product_attention", 2, func() *autograd.Tensor { return autograd.ScaledDotProductAttention(q, q, q, true) }},
	}
	for _, c := range calls {
		ops := map[string]bool{c.op: true}
		log := autograd.NewOutputLog(ops)
		s.SetOutputLog(log)
		y := c.f()
		s.SetOutputLog(nil)
		logged := log.Outputs()
		if len(logged) != c.n || logged[0].Block() != y.Block() {
			t.Fatalf("%s: logged %d entries, first on the output's block %v; want %d, true", c.op, len(logged), logged[0].Block() == y.Block(), c.n)
		}
		logged[0].Fill(7)
		s.SetOutputLog(autograd.ReplayLog(ops, logged))
		r := c.f()
		s.SetOutputLog(nil)
		if r.Block() != y.Block() || r.Float32s()[0] != 7 {
			t.Errorf("%s: replay on the logged block %v, value %v; want true, 7", c.op, r.Block() == y.Block(), r.Float32s()[0])
		}
		for _, l := range append(logged, y, r) {
			l.Release()
		}
	}
}
