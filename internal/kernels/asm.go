//go:build !noasm

package kernels

const noasm = false
