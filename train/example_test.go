package train_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/train"
)

const exRows, exIn, exClasses = 8, 4, 3

// exampleBatch returns a fixed, seeded batch: exRows×exIn inputs and exRows labels.
func exampleBatch() ([]float64, []int64) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, exRows*exIn)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	y := make([]int64, exRows)
	for i := range y {
		y[i] = int64(rng.IntN(exClasses))
	}
	return x, y
}

// exampleMicro returns the Stepper forward for the batch in k micro-batches.
func exampleMicro(dev *device.Device, m nn.Layer, k int) func(s *autograd.Scope, i int) *autograd.Tensor {
	x, y := exampleBatch()
	per := exRows / k
	return func(s *autograd.Scope, i int) *autograd.Tensor {
		xs := s.FromFloat64s(dev, []int{per, exIn}, x[i*per*exIn:(i+1)*per*exIn])
		ys := s.FromInt64s(dev, []int{per}, y[i*per:(i+1)*per])
		return autograd.CrossEntropy(m.Forward(xs), ys, autograd.CEOptions{})
	}
}

// ExampleStepper accumulates the gradients of 2 micro-batches per optimizer
// step, and reads each kind of memory's exact peak with Peaks.
func ExampleStepper() {
	dev := cpu.New(0, device.Options{})
	m := nn.NewLinear(nn.NewBuilder(dev, dtype.F64, 1), "fc", exIn, exClasses, true) // seeded init
	opt, err := optim.NewSGD(m.Params(), optim.SGDConfig{LR: 0.5, Momentum: 0.9})
	if err != nil {
		panic(err)
	}
	st := &train.Stepper{Opt: opt, Accum: 2}
	forward := exampleMicro(dev, m, 2)
	for range 3 {
		loss, stepped, err := st.Step(forward) // 2 forward+backward, 1 optimizer step
		if err != nil {
			panic(err)
		}
		fmt.Printf("step %d: loss %.4f, stepped %v\n", st.Steps(), loss, stepped)
	}
	p := train.Peaks(dev.Stats())
	// (4×3 weights + 3 biases) × 8 bytes each = 120 bytes.
	fmt.Printf("peak bytes: parameter %d, gradient %d, optimizer %d\n", p.Parameter, p.Gradient, p.Optimizer)

	opt.Release()
	nn.Release(m)
	fmt.Println("bytes still allocated:", dev.Stats().Requested.Current)
	// Output:
	// step 1: loss 1.5893, stepped true
	// step 2: loss 0.9954, stepped true
	// step 3: loss 0.5986, stepped true
	// peak bytes: parameter 120, gradient 120, optimizer 120
	// bytes still allocated: 0
}

// ExampleSaveSnapshot saves a run after 2 steps and resumes it in a fresh
// model and optimizer, which then continue exactly where it stopped.
func ExampleSaveSnapshot() {
	dir, err := os.MkdirTemp("", "snapshot")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "run.safetensors")
	dev := cpu.New(0, device.Options{})

	// run builds a model (seeded init) and its optimizer, resumes from the
	// snapshot if asked, and takes optimizer steps up to step end.
	run := func(seed uint64, resume bool, end int) {
		m := nn.NewLinear(nn.NewBuilder(dev, dtype.F64, seed), "fc", exIn, exClasses, true)
		defer nn.Release(m)
		opt, err := optim.NewSGD(m.Params(), optim.SGDConfig{LR: 0.5, Momentum: 0.9})
		if err != nil {
			panic(err)
		}
		defer opt.Release()
		st := &train.Stepper{Opt: opt}
		if resume {
			snap, err := train.LoadSnapshot(path, m, opt)
			if err != nil {
				panic(err)
			}
			st.SetSteps(snap.Step)
			fmt.Printf("resumed at step %d (loss %.4f)\n", snap.Step, snap.Loss)
		}
		var loss float64
		for st.Steps() < end {
			if loss, _, err = st.Step(exampleMicro(dev, m, 1)); err != nil {
				panic(err)
			}
			fmt.Printf("step %d: loss %.4f\n", st.Steps(), loss)
		}
		if !resume {
			if err := train.SaveSnapshot(path, m, opt, train.Snapshot{Step: st.Steps(), Loss: loss}); err != nil {
				panic(err)
			}
		}
	}
	// Step 3's loss is that of ExampleStepper's uninterrupted run (the same
	// batch, there in 2 micro-batches): the resumed run continues exactly.
	run(1, false, 2) // the first run: 2 steps, then save
	run(7, true, 4)  // a fresh model (other init) resumes and runs steps 3 and 4
	fmt.Println("bytes still allocated:", dev.Stats().Requested.Current)
	// Output:
	// step 1: loss 1.5893
	// step 2: loss 0.9954
	// resumed at step 2 (loss 0.9954)
	// step 3: loss 0.5986
	// step 4: loss 0.4309
	// bytes still allocated: 0
}
