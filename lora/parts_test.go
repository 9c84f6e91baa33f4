package lora_test

import (
	"slices"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/lora"
	"github.com/headroom-ml/headroom/nn"
)

// TestParts: targets q and v (the LoRA paper's W_q, W_v) put one adapter
// on each c_attn with B of 2·C rows; its output's k third is the base
// layer's bit for bit while q and v change, and the gradients of A and B
// match central differences (F64).
func TestParts(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	m := apply(t, newGPT(t, dev, dtype.F64, 23), lora.Config{Rank: 2, Alpha: 4, Targets: []string{"q", "v"}})
	defer nn.Release(m)
	randomB(m, 24)
	if len(m.Adapters) != tiny.Layers {
		t.Fatalf("%d adapters, want one per block on c_attn", len(m.Adapters))
	}
	a := m.Adapters[0]
	if a.B.Dim(0) != 2*tiny.Width || a.Parts != [3]bool{true, false, true} {
		t.Fatalf("q, v adapter: B %v, parts %v; want (2·%d, r) and q, v", a.B.Shape(), a.Parts, tiny.Width)
	}
	rows := 5
	xv := make([]float64, rows*tiny.Width)
	for i := range xv {
		xv[i] = float64(i%7) - 3
	}
	out := func(l nn.Layer) []float64 {
		s := autograd.NewScope()
		defer s.Release()
		var v []float64
		s.NoGrad(func() { v = l.Forward(s.FromFloat64s(dev, []int{rows, tiny.Width}, xv)).Float64s() })
		return v
	}
	got, base := out(a), out(a.Base)
	c := tiny.Width
	for r := range rows {
		row, brow := got[r*3*c:(r+1)*3*c], base[r*3*c:(r+1)*3*c]
		if !slices.Equal(row[c:2*c], brow[c:2*c]) {
			t.Fatalf("row %d: the k third differs from the base's", r)
		}
		if slices.Equal(row[:c], brow[:c]) || slices.Equal(row[2*c:], brow[2*c:]) {
			t.Fatalf("row %d: the q or v third equals the base's with B ≠ 0", r)
		}
	}
	x, y := batch(25)
	autogradtest.Check(t, autogradtest.Options{Seed: 8}, func(s *autograd.Scope, _ []*autograd.Tensor) *autograd.Tensor {
		return loss(s, dev, m, x, y)
	}, a.A, a.B)
}
