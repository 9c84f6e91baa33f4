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
