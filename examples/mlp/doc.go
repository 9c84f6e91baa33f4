// Command mlp trains a small multi-layer perceptron on a synthetic
// classification task with the core API alone (autograd, nn, a hand-written
// SGD step) and prints where every byte of device memory went.
//
//	go run ./examples/mlp [--steps 300] [--batch 64] [--mem-limit 64MiB]
package main
