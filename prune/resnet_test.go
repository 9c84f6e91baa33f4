package prune_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/prune"
)

// group is one prunable channel group of a residual block.
type group struct {
	conv *nn.Conv2d
	bn   *nn.BatchNorm2d
}

// groups lists r's prunable groups in the order prune.ResNet reports them.
func groups(t *testing.T, r *nn.ResNet) []group {
	var gs []group
	for _, blk := range r.Blocks() {
		switch b := blk.(type) {
		case *nn.BasicBlock:
			gs = append(gs, group{b.Conv1, b.BN1})
		case *nn.Bottleneck:
			gs = append(gs, group{b.Conv1, b.BN1}, group{b.Conv2, b.BN2})
		default:
			t.Fatalf("block %T", blk)
		}
	}
	return gs
}

// TestResNetZeroedChannelsAreExact zeroes the channels pruning will
// remove — their filters and their batch norm's weight and bias, so that
// the batch norm outputs 0 for them and the next convolution receives
// nothing from them — and checks that the pruned model computes the same
// function in eval mode.
func TestResNetZeroedChannelsAreExact(t *testing.T) {
	bottleneck := nn.ResNetConfig{Block: "bottleneck", Blocks: []int{1, 2}, Widths: []int{4, 6}, Stem: "small", InChannels: 2, Classes: 5}
	for _, tc := range []struct {
		name     string
		dt       dtype.DType
		small    bool
		cfg      nn.ResNetConfig
		fraction float64
		tol      float64
	}{
		{"small f64 0.5", dtype.F64, true, nn.ResNetConfig{InChannels: 1}, 0.5, 1e-13},
		{"small f32 0.3", dtype.F32, true, nn.ResNetConfig{InChannels: 1}, 0.3, 1e-6},
		{"bottleneck f64 0.5", dtype.F64, false, bottleneck, 0.5, 1e-13},
		{"bottleneck f32 0.3", dtype.F32, false, bottleneck, 0.3, 1e-6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := cpu.New(0, device.Options{})
			b := nn.NewBuilder(dev, tc.dt, 1)
			var r *nn.ResNet
			var err error
			if tc.small {
				r, err = nn.SmallResNet(b, "net", tc.cfg)
			} else {
				r, err = nn.NewResNet(b, "net", tc.cfg)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer nn.Release(r)
			randomize(r, 2)
			rng := rand.New(rand.NewPCG(3, 4))
			var want [][]int
			for _, g := range groups(t, r) {
				n := g.conv.Out
				drop := pick(rng, n, n-prune.KeepCount(n, tc.fraction))
				zeroRows(g.conv.Weight, 0, drop)
				zeroRows(g.bn.Weight, 0, drop)
				zeroRows(g.bn.Bias, 0, drop)
				want = append(want, complement(n, drop))
			}
			shape := []int{3, r.Config.InChannels, 12, 12}
			x := randSlice(5, 3*r.Config.InChannels*144)
			before := forward(dev, r, tc.dt, shape, x)

			rep, err := prune.ResNet(r, tc.fraction, prune.Options{Height: 12, Width: 12})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Layers) != len(want) {
				t.Fatalf("%d layers reported, want %d", len(rep.Layers), len(want))
			}
			for i, l := range rep.Layers {
				if !slices.Equal(l.Kept, want[i]) || l.After != len(want[i]) {
					t.Errorf("%s: kept %v (%d), want the non-zero channels %v", l.Name, l.Kept, l.After, want[i])
				}
			}
			after := forward(dev, r, tc.dt, shape, x)
			d := maxRelDiff(after, before)
			t.Logf("%s: %d → %d parameters, FLOPs %d → %d at 12×12; max relative difference %.3g", tc.name, rep.ParamsBefore, rep.ParamsAfter, rep.FLOPsBefore, rep.FLOPsAfter, d)
			if d > tc.tol {
				t.Errorf("pruned output differs by %.3g (relative), want ≤ %g", d, tc.tol)
			}
		})
	}
}

// smallCount is SmallResNet's (1 input channel, 10 classes) trainable
// parameter count and BatchNorm buffer elements when its blocks keep k1,
// k2, k3 inner channels, from nn's per-layer formulas.
func smallCount(k1, k2, k3 int) (params, buffers int64) {
	stem := 1*16*9 + 2*16
	b1 := 16*k1*9 + 2*k1 + k1*16*9 + 2*16
	b2 := 16*k2*9 + 2*k2 + k2*32*9 + 2*32 + 16*32 + 2*32
	b3 := 32*k3*9 + 2*k3 + k3*64*9 + 2*64 + 32*64 + 2*64
	fc := 64*10 + 10
	bufs := 2 * (16 + (k1 + 16) + (k2 + 32 + 32) + (k3 + 64 + 64))
	return int64(stem + b1 + b2 + b3 + fc), int64(bufs)
}

// smallFLOPs is SmallResNet's FLOPs on one 28×28 image with k1, k2, k3
// inner channels: 2·multiply-adds of every convolution and fc.
func smallFLOPs(k1, k2, k3 int) int64 {
	f := 2 * (16*1*9*784 +
		k1*16*9*784 + 16*k1*9*784 +
		k2*16*9*196 + 32*k2*9*196 + 32*16*196 +
		k3*32*9*49 + 64*k3*9*49 + 64*32*49 +
		64*10)
	return int64(f)
}

// TestResNetClosedForm checks the report's counts, the allocator's
// parameter bytes and the FLOPs against closed forms for SmallResNet.
func TestResNetClosedForm(t *testing.T) {
	if p, _ := smallCount(16, 32, 64); p != 77_754 {
		t.Fatalf("closed form of the unpruned model: %d, want nn's 77,754", p)
	}
	for _, f := range []float64{0, 0.3, 0.5} {
		dev := cpu.New(0, device.Options{})
		r, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, 1), "", nn.ResNetConfig{InChannels: 1})
		if err != nil {
			t.Fatal(err)
		}
		before := paramBytes(dev)
		rep, err := prune.ResNet(r, f, prune.Options{})
		if err != nil {
			t.Fatal(err)
		}
		k1, k2, k3 := prune.KeepCount(16, f), prune.KeepCount(32, f), prune.KeepCount(64, f)
		params, bufs := smallCount(k1, k2, k3)
		p0, b0 := smallCount(16, 32, 64)
		switch {
		case rep.ParamsBefore != p0 || rep.ParamsAfter != params:
			t.Errorf("fraction %g: parameters %d → %d, want %d → %d", f, rep.ParamsBefore, rep.ParamsAfter, p0, params)
		case rep.BytesBefore != 4*(p0+b0) || rep.BytesAfter != 4*(params+bufs):
			t.Errorf("fraction %g: bytes %d → %d, want %d → %d", f, rep.BytesBefore, rep.BytesAfter, 4*(p0+b0), 4*(params+bufs))
		case before != rep.BytesBefore || paramBytes(dev) != rep.BytesAfter:
			t.Errorf("fraction %g: allocator's parameter bytes %d → %d, report %d → %d", f, before, paramBytes(dev), rep.BytesBefore, rep.BytesAfter)
		case rep.FLOPsBefore != smallFLOPs(16, 32, 64) || rep.FLOPsAfter != smallFLOPs(k1, k2, k3):
			t.Errorf("fraction %g: FLOPs %d → %d, want %d → %d", f, rep.FLOPsBefore, rep.FLOPsAfter, smallFLOPs(16, 32, 64), smallFLOPs(k1, k2, k3))
		case !slices.Equal(rep.Input, []int{28, 28}):
			t.Errorf("fraction %g: FLOPs counted at %v, want [28 28]", f, rep.Input)
		}
		if live := dev.Leaks(device.Parameter); len(live) != 0 {
			t.Errorf("fraction %g: tensors other than parameters left allocated: %v", f, live)
		}
		t.Logf("fraction %g: keep %d, %d, %d channels\n%s", f, k1, k2, k3, rep.Summary())
		nn.Release(r)
	}
}

// TestResNetStillTrains runs a training step and an optimizer step on a
// pruned SmallResNet: gradients have the pruned shapes.
func TestResNetStillTrains(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	r, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, 1), "", nn.ResNetConfig{InChannels: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(r)
	if _, err := prune.ResNet(r, 0.5, prune.Options{}); err != nil {
		t.Fatal(err)
	}
	loss, err := trainStep(dev, r, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range nn.Trainable(r) {
		if g := p.T.Grad(); g == nil || !slices.Equal(g.Shape(), p.T.Shape()) {
			t.Errorf("%s %v: gradient %v", p.Name, p.T.Shape(), g)
		}
	}
	opt, err := optim.NewSGD(r.Params(), optim.SGDConfig{LR: 0.1, Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Release()
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	opt.ZeroGrad()
	loss2, err := trainStep(dev, r, 7)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loss %.4f after pruning half the inner channels, %.4f after one SGD step", loss, loss2)
	if !(loss2 < loss) {
		t.Errorf("loss %.4f after an SGD step on the same batch, want below %.4f", loss2, loss)
	}
}

// TestPrunedValuesAreCopiedExactly checks, in every float dtype, that the
// new tensors hold the old values of the kept channels bit for bit: the
// first block's conv1 (rows), bn1 (elements) and conv2 (columns).
func TestPrunedValuesAreCopiedExactly(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F64, dtype.F32, dtype.F16, dtype.BF16} {
		dev := cpu.New(0, device.Options{})
		r, err := nn.SmallResNet(nn.NewBuilder(dev, dt, 1), "", nn.ResNetConfig{InChannels: 1})
		if err != nil {
			t.Fatal(err)
		}
		randomize(r, 8)
		k := r.Stages[0][0].(*nn.BasicBlock)
		w1, bn, w2 := k.Conv1.Weight.Float64s(), k.BN1.RunningVar.Float64s(), k.Conv2.Weight.Float64s()
		rep, err := prune.ResNet(r, 0.5, prune.Options{})
		if err != nil {
			t.Fatal(err)
		}
		kept := rep.Layers[0].Kept
		n1, n2, nb := k.Conv1.Weight.Float64s(), k.Conv2.Weight.Float64s(), k.BN1.RunningVar.Float64s()
		bad := 0
		for i, c := range kept {
			for j := range 16 * 9 { // conv1 row c: (16 inputs, 3×3)
				if n1[i*144+j] != w1[c*144+j] {
					bad++
				}
			}
			if nb[i] != bn[c] {
				bad++
			}
			for o := range 16 { // conv2 column c of output o
				for j := range 9 {
					if n2[(o*len(kept)+i)*9+j] != w2[(o*16+c)*9+j] {
						bad++
					}
				}
			}
		}
		if bad > 0 || k.Conv1.Weight.DType() != dt || !k.Conv1.Weight.RequiresGrad() || k.BN1.RunningVar.RequiresGrad() {
			t.Errorf("%s: %d values differ; dtype %s, weight requires grad %v, buffer %v", dt, bad, k.Conv1.Weight.DType(), k.Conv1.Weight.RequiresGrad(), k.BN1.RunningVar.RequiresGrad())
		}
		nn.Release(r)
	}
}
