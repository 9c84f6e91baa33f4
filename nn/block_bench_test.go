package nn

import (
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// unfusedForward is BasicBlock.Forward as it was before BatchNorm+ReLU
// fusion: BatchNorm, then ReLU over its output.
func (k *BasicBlock) unfusedForward(x *autograd.Tensor) *autograd.Tensor {
	h := k.Conv1.Forward(x)
	n := k.BN1.Forward(h)
	h.Release()
	r := n.ReLU()
	n.Release()
	h = k.Conv2.Forward(r)
	r.Release()
	n = k.BN2.Forward(h)
	h.Release()
	return residual(x, n, k.Downsample)
}

// BenchmarkBasicBlockEval times one eval forward (no graph) of ResNet-18's
// first-stage block (64 channels, 32×32, batch 32) with BatchNorm and
// ReLU fused ("fused") and as two ops ("unfused"), in F32 and BF16: take
// the ratio with -count and benchstat.
func BenchmarkBasicBlockEval(b *testing.B) {
	dev := cpu.New(0, device.Options{})
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		k := NewBasicBlock(NewBuilder(dev, dt, 1), "k", 64, 64, 1)
		k.Train(false)
		s := autograd.NewScope()
		x := s.Full(dev, dt, 0.5, 32, 64, 32, 32)
		for _, fused := range []bool{false, true} {
			name := dt.String() + "/unfused"
			f := k.unfusedForward
			if fused {
				name, f = dt.String()+"/fused", k.Forward
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					s.NoGrad(func() { f(x).Release() })
				}
			})
		}
		s.Release()
		Release(k)
	}
}

// TestBasicBlockFusedMatchesUnfused: in eval the fused block gives the
// unfused block's output bit for bit (F32 and BF16).
func TestBasicBlockFusedMatchesUnfused(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		k := NewBasicBlock(NewBuilder(dev, dt, 1), "k", 4, 4, 1)
		k.Train(false)
		s := autograd.NewScope()
		x := s.Full(dev, dt, 0, 2, 4, 5, 5)
		v := make([]float64, x.Len())
		for i := range v {
			v[i] = float64((i*37)%23)/11 - 1
		}
		x.SetFloat64s(v)
		var got, want []float64
		s.NoGrad(func() {
			got = k.Forward(x).Float64s()
			want = k.unfusedForward(x).Float64s()
		})
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: y[%d] = %v fused, %v unfused", dt, i, got[i], want[i])
			}
		}
		s.Release()
		Release(k)
	}
}
