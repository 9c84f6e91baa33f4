// Package cuda is the device cuda:N, an NVIDIA GPU driven through the CUDA
// driver API, NVRTC and cuBLAS, loaded at run time (no cgo: a binary built
// with CGO_ENABLED=0 runs on machines with or without CUDA; see Open's
// errors). Documentation of the trade, knobs and memory formula follows in
// this file.
package cuda
