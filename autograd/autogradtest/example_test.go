package autogradtest_test

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
)

// printTB is the part of testing.TB that Check uses, for use outside a
// test: it prints what Check reports, up to the numbers (whose last
// digits depend on rounding).
type printTB struct{}

func (printTB) Helper() {}

func (printTB) Errorf(format string, args ...any) {
	msg, _, _ := strings.Cut(fmt.Sprintf(format, args...), ": analytic")
	fmt.Println("error:", msg)
}

func (printTB) Logf(format string, args ...any) { fmt.Printf(format+"\n", args...) }

// Check the gradients of y = tanh(x·w) + x² with respect to both x and w
// against central differences. Inputs are F64 leaves that require grad;
// the function receives them attached to a fresh scope.
func ExampleCheck() {
	dev := cpu.New(0, device.Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	x := autogradtest.Rand(dev, rng, -1, 1, 2, 3)
	w := autogradtest.Rand(dev, rng, -1, 1, 3, 4)

	f := func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
		x, w := in[0], in[1]
		return x.MatMul(w).Tanh().Add(x.Mul(x).Sum(true, 1))
	}
	ok := autogradtest.Check(printTB{}, autogradtest.Options{}, f, x, w)
	fmt.Println("gradients match:", ok)
	fmt.Println("gradients left zeroed:", x.Grad() == nil || allZero(x.Grad().Float64s()))
	autogradtest.Release(x, w)
	fmt.Println("live blocks after Release:", dev.LiveBlocks())
	// Output:
	// gradients match: true
	// gradients left zeroed: true
	// live blocks after Release: 0
}

// A backward with a bug (d(x²)/dx written as x instead of 2x) fails the
// check, which names the first wrong element.
func ExampleCheck_wrongGradient() {
	dev := cpu.New(0, device.Options{})
	x := autogradtest.Rand(dev, rand.New(rand.NewPCG(1, 2)), 0.5, 1, 3)

	badSquare := func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
		x := in[0]
		var y *autograd.Tensor
		s.NoGrad(func() { y = x.Mul(x) })
		autograd.Record(autograd.Custom{
			Name: "bad_square", Outs: []*autograd.Tensor{y}, Ins: []*autograd.Tensor{x}, Saved: []*autograd.Tensor{x},
			Backward: func(grads, saved []*autograd.Tensor, need []bool) []*autograd.Tensor {
				return []*autograd.Tensor{grads[0].Mul(saved[0])} // should be 2·x·g
			},
		})
		return y
	}
	ok := autogradtest.Check(printTB{}, autogradtest.Options{}, badSquare, x)
	fmt.Println("gradients match:", ok)
	autogradtest.Release(x)
	fmt.Println("live blocks after Release:", dev.LiveBlocks())
	// Output:
	// error: gradcheck: input 0 [3] element 0
	// gradients match: false
	// live blocks after Release: 0
}

func allZero(v []float64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}
