// Package autogradtest checks gradients against finite differences, for the
// tests of every package that defines differentiable operations.
//
// Check runs a function of F64 leaves once through the autograd engine, for
// the analytic gradients, and twice more per input element (at ±Eps), for
// central differences of a fixed random projection of the output. It
// reports the first mismatching element through the test's Errorf and
// returns whether all gradients agreed:
//
//	rng := rand.New(rand.NewPCG(1, 2))
//	x := autogradtest.Rand(dev, rng, -1, 1, 2, 3) // F64 leaf, requires grad
//	defer autogradtest.Release(x)
//	autogradtest.Check(t, autogradtest.Options{}, func(s *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
//		return in[0].Tanh()
//	}, x)
//
// The device must compute (cpu, not meta). Check restores the inputs'
// values and leaves their gradients zeroed, and holds no memory afterwards.
package autogradtest
