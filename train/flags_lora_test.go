package train_test

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

// buffered is a model of one weight and two buffers.
type buffered struct{ w, b1, b2 *autograd.Tensor }

func (m *buffered) Params() []nn.Param {
	return []nn.Param{{Name: "w", T: m.w}, {Name: "b1", T: m.b1, Buffer: true}, {Name: "b2", T: m.b2, Buffer: true}}
}
func (m *buffered) Train(bool) {}

// stepBuffered is buffered with StepBuffers: only b1 can change in a step
// (lora.GPT says none of its frozen base can).
type stepBuffered struct{ buffered }

func (m *stepBuffered) StepBuffers() []nn.Param { return m.Params()[1:2] }

// TestStepBuffers: a failed step puts back every buffer of a model, but
// only the StepBuffers of a model that has them (the others are not copied
// to the host: a step that wrote them would keep the write, as b2 shows).
func TestStepBuffers(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	for _, withMethod := range []bool{false, true} {
		b := buffered{w: autograd.Param(dev, dtype.F64, "w", 1), b1: autograd.Full(dev, dtype.F64, 1, 1), b2: autograd.Full(dev, dtype.F64, 1, 1)}
		var m nn.Module = &b
		if withMethod {
			m = &stepBuffered{b}
		}
		opt, err := optim.NewSGD(nn.Trainable(m), optim.SGDConfig{LR: 0.1})
		if err != nil {
			t.Fatal(err)
		}
		st := &train.Stepper{Opt: opt, Model: m}
		_, _, err = st.Step(func(s *autograd.Scope, _ int) *autograd.Tensor {
			b.b1.SetFloat64s([]float64{5})
			b.b2.SetFloat64s([]float64{5})
			return s.Use(b.w).Scale(math.NaN()).Reshape()
		})
		if err == nil {
			t.Fatalf("StepBuffers %v: a NaN loss stepped", withMethod)
		}
		want2 := 1.0
		if withMethod {
			want2 = 5
		}
		if g1, g2 := b.b1.Item(), b.b2.Item(); g1 != 1 || g2 != want2 {
			t.Errorf("StepBuffers %v: after the failed step b1 = %v, b2 = %v; want 1 and %v", withMethod, g1, g2, want2)
		}
		opt.Release()
		nn.Release(m)
	}
}
