//go:build !amd64 || noasm

package kernels

// Without the assembly the Winograd transforms run their Go twins only.

func winoInput8AVX2(blk *winoPanel, i int, src *float32, ld int) {
	panic("kernels: no assembly")
}

func winoOutput8AVX2(blk *winoPanel, i int, dst *float32, ld int) {
	panic("kernels: no assembly")
}

// winoAsm says whether the transforms run the assembly.
var winoAsm = false
