package autograd

// SetLinearBiasCopy switches Linear between its fused bias (false) and the
// copy of the bias into the output before a beta-1 GEMM (true), and
// returns the previous setting: for the same-run benchmarks and the
// bit-exactness test.
func SetLinearBiasCopy(on bool) bool {
	old := linearBiasCopy
	linearBiasCopy = on
	return old
}
