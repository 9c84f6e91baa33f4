//go:build noasm || !amd64

package kernels

// dxAsm: without assembly there is no direct kernel; the direct
// convolution runs its Go twin (only tests call it; the product keeps
// Conv2dHalf's route).
func dxAsm() dxKernel { return nil }

// dxPackPairs is packRow's loop over whole channel pairs, in Go.
func dxPackPairs(blk []uint32, w []uint16, np, st int) { packPairsGo(blk, w, np, st) }
