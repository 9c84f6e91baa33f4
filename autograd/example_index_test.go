package autograd_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// Embedding looks rows up by token id; rows used twice get twice the
// gradient.
func ExampleEmbedding() {
	dev := cpu.New(0, device.Options{})
	wte := autograd.Param(dev, dtype.F32, "wte", 4, 2) // (V, C)
	wte.SetFloat32s([]float32{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5})

	s := autograd.NewScope()
	ids := s.FromInt64s(dev, []int{3}, []int64{2, 0, 2})
	x := autograd.Embedding(s.Use(wte), ids) // (3, C)
	fmt.Println(x.Shape(), x.Float32s())
	if err := x.Sum(false).Backward(); err != nil {
		panic(err)
	}
	fmt.Println("grad:", wte.Grad().Float32s())
	s.Release()
	wte.Release()
	// Output:
	// [3 2] [2 2.5 0 0.5 2 2.5]
	// grad: [1 1 0 0 2 2 0 0]
}

// IndexSelect picks slices along a dimension; Gather picks one element per
// index position.
func ExampleGather() {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	x := s.FromFloat32s(dev, []int{2, 3}, []float32{10, 11, 12, 20, 21, 22})
	cols := s.FromInt64s(dev, []int{2}, []int64{2, 0})
	fmt.Println(autograd.IndexSelect(x, 1, cols).Float32s())
	pick := s.FromInt64s(dev, []int{2, 1}, []int64{1, 2}) // one column per row
	fmt.Println(autograd.Gather(x, 1, pick).Float32s())
	// Output:
	// [12 10 22 20]
	// [11 22]
}

// Dropout draws its mask from a counter-based generator: restoring the
// generator's state replays the same mask, and nothing is saved for
// backward.
func ExampleDropout() {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	x := s.Full(dev, dtype.F32, 1, 8)
	gen := autograd.NewGenerator(42)
	st := gen.State()
	a := autograd.Dropout(x, 0.5, gen, true).Float32s()
	gen.SetState(st)
	b := autograd.Dropout(x, 0.5, gen, true).Float32s()
	fmt.Println(a)
	fmt.Println("replayed:", fmt.Sprint(a) == fmt.Sprint(b), "state:", gen.State())
	fmt.Println("eval:", autograd.Dropout(x, 0.5, gen, false).Float32s())
	// Output:
	// [2 0 0 0 2 0 2 0]
	// replayed: true state: {42 8}
	// eval: [1 1 1 1 1 1 1 1]
}

// Causal attention over two positions: the first query sees only itself.
func ExampleScaledDotProductAttention() {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	// (B, H, T, D) = (1, 1, 2, 2)
	q := s.FromFloat32s(dev, []int{1, 1, 2, 2}, []float32{1, 0, 0, 1})
	k := s.FromFloat32s(dev, []int{1, 1, 2, 2}, []float32{1, 0, 0, 1})
	v := s.FromFloat32s(dev, []int{1, 1, 2, 2}, []float32{1, 2, 3, 4})
	for _, causal := range []bool{false, true} {
		y := autograd.ScaledDotProductAttention(q, k, v, causal)
		out := y.Float32s()
		fmt.Printf("causal=%v: [%.3f %.3f %.3f %.3f]\n", causal, out[0], out[1], out[2], out[3])
	}
	// Output:
	// causal=false: [1.660 2.660 2.340 3.340]
	// causal=true: [1.000 2.000 2.340 3.340]
}
