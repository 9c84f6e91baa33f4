//go:build noasm

package kernels

// noasm forces the pure-Go paths (build with -tags noasm).
const noasm = true
