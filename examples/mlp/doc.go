// Command mlp is the README's program, complete: it trains a small
// multi-layer perceptron on a synthetic classification task with the core
// API alone (a cpu device with a capacity, nn layers, autograd, SGD), each
// step written with Scope.Run so that every failure — an out-of-memory
// included — comes back as an error, and prints where every byte of device
// memory went.
//
//	go run ./examples/mlp [--steps 300] [--batch 64] [--lr 0.02]
//
// Its exit status follows train.ExitCode.
package main
