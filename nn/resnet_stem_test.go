package nn

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// unfusedStem is resnetStem.Forward as it was before BatchNorm+ReLU
// fusion: BatchNorm, then ReLU over its output.
func (st resnetStem) unfusedStem(x *autograd.Tensor) *autograd.Tensor {
	r := st.r
	h := r.Conv1.Forward(x)
	n := r.BN1.Forward(h)
	h.Release()
	h = n.ReLU()
	n.Release()
	return st.pool(h)
}

// TestResNetStemFusedMatchesUnfused: in eval the stem gives the unfused
// stem's output bit for bit (both stems, F32 and BF16), and its
// activation peak without a graph is no higher.
func TestResNetStemFusedMatchesUnfused(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	for _, stem := range []string{"small", "imagenet"} {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			r, err := NewResNet(NewBuilder(dev, dt, 1), "r", ResNetConfig{Blocks: []int{1}, Widths: []int{8}, Stem: stem, Classes: 3})
			if err != nil {
				t.Fatal(err)
			}
			r.Train(false)
			s := autograd.NewScope()
			x := s.Full(dev, dt, 0, 2, 3, 12, 12)
			x.SetFloat64s(stemInput(x.Len()))
			var got, want []float64
			var peaks [2]int64
			for i, f := range []func(*autograd.Tensor) *autograd.Tensor{resnetStem{r}.unfusedStem, resnetStem{r}.Forward} {
				dev.ResetPeak()
				before := dev.Stats().ByTag[device.Activation].Current
				s.NoGrad(func() {
					y := f(x)
					if i == 0 {
						want = y.Float64s()
					} else {
						got = y.Float64s()
					}
					y.Release()
				})
				peaks[i] = dev.Stats().ByTag[device.Activation].Peak - before
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s %s: y[%d] = %v fused, %v unfused", stem, dt, i, got[i], want[i])
				}
			}
			if peaks[1] > peaks[0] {
				t.Errorf("%s %s: activation peak %d bytes fused, %d unfused", stem, dt, peaks[1], peaks[0])
			}
			t.Logf("%s %s: activation peak %d bytes fused, %d unfused", stem, dt, peaks[1], peaks[0])
			s.Release()
			Release(r)
		}
	}
}

// stemInput returns n values of both signs in [-1, 1].
func stemInput(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Sin(float64(i) * 0.7)
	}
	return v
}
