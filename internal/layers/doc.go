// Package layers holds the project's package layering — which package may
// import which — and the test that enforces it. It has no code of its own.
package layers

// Order lists the project's packages from the bottom up, by layer: a
// package may import only packages of lower layers (its in-package tests may
// also import packages of its own layer). Paths are relative to the
// module; a trailing "/..." covers a folder's subpackages. External test
// packages (package x_test) are consumers like any program and may import
// any layer.
var Order = [][]string{
	{"dtype", "internal/memview", "internal/memview/memviewtest", "internal/cputime"},
	{"internal/kernels", "safetensors", "internal/cuda", "internal/cuda/emu"},
	{"device"},
	{"device/cpu", "device/meta", "device/cuda"},
	{"autograd", "device/cuda/cudatest"},
	{"autograd/autogradtest"},
	{"nn"},
	{"optim", "checkpoint", "data"},
	{"amp", "autograd/conformance"},
	{"quant", "prune", "parallel"},
	{"train", "lora"},
	{"examples/resnet/run", "examples/transformer/run", "train/traintest"},
	{"plan"},
	{"bench"},
	{"examples/...", "cmd/..."},
	{"internal/layers"},
}
