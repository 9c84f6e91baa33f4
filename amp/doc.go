// Package amp trades precision for memory: mixed precision keeps
// activations (autocast) or parameters and gradients (master weights) in
// 16 bits, and dynamic loss scaling keeps small F16 gradients from
// vanishing.
//
// Two modes, both composing with the Scaler, activation checkpointing and
// gradient accumulation:
//
//   - Autocast (Scope.Autocast in package autograd): parameters stay F32;
//     matrix products and convolutions run in F16 or BF16, so what the
//     forward pass saves is half the size; gradients arrive in F32. Each
//     weight's 16-bit cast is made once per step (tagged parameter) and
//     freed as soon as backward has passed it, as PyTorch's is, so at a
//     backward peak only the casts of the layers not yet passed are alive.
//   - Low-precision parameters with F32 master weights: the model is built
//     in F16 or BF16 (2 bytes per parameter and 2 per gradient) and the
//     optimizer keeps F32 master weights and F32 state (optim's
//     MasterWeights: 4 + 8 bytes per parameter for Adam) — the layout the
//     ZeRO paper's memory formulas assume.
//   - The same with F32 main gradients (MainGradsF32, the programs'
//     --grad-f32; Megatron-LM's main_grad, which it forces on for BF16):
//     each 16-bit parameter's gradient is kept in F32, so micro-batches
//     accumulate, data parallelism reduces and clipping scales in F32, and
//     the master update reads it directly: 2 + 4 + 12 bytes per parameter
//     for Adam, 6 + 12/N under ZeRO stage 1 over N ranks (Megatron's
//     distributed optimizer), against 4 + 12/N with 16-bit gradients. Off
//     by default: it costs 2 bytes per parameter, and with one micro-batch,
//     one rank and no clipping it changes no bit (every gradient is then a
//     single 16-bit contribution, which F32 holds exactly); it pays where
//     many contributions are added (accumulation over 64 micro-batches:
//     relative error 4.5e-9 against 8.6e-3 for BF16 sums, amp's
//     TestMainGradsF32Accumulation).
//
// The Scaler is PyTorch's GradScaler: multiply the loss by a scale before
// backward so that F16 gradients do not underflow, divide the gradients by
// it before the optimizer step, skip the step when a gradient overflowed,
// and adapt the scale. The overflow check costs one device→host read per
// device per Unscale, whatever the number of gradients: optim.SumSquares
// unscales every gradient and writes its Σ g² (float64) into one F64
// workspace element, one workspace tensor per device, read once (a
// non-contiguous gradient, which backward never makes, is checked with a
// read of its own); a non-finite sum is an overflow. Its defaults are
// PyTorch's: InitScale 2^16, GrowthFactor 2, BackoffFactor 0.5,
// GrowthInterval 2000. BF16 has F32's exponent range and needs no scaling:
// a Scaler made for BF16 is disabled and says so. A disabled Scaler is a no-op, so one loop serves all modes
// (ExampleScaler_trainingLoop runs it; train.Stepper is this loop with
// gradient accumulation, and leaves everything as it was when a step
// fails, the Scaler included: Mark):
//
//	sc := amp.NewScaler(dtype.F16, amp.ScalerConfig{})
//	for step := … {
//		s := autograd.NewScope()
//		err := s.Run(func() error {
//			var loss *autograd.Tensor
//			s.Autocast(dtype.F16, func() { loss = model(s, x) })
//			return sc.ScaleLoss(loss).Backward()
//		})
//		if err != nil { … }
//		if err := sc.Unscale(opt); err != nil { … }   // before clipping
//		optim.ClipGradNorm(opt.Params(), 1)
//		if _, err := sc.Step(opt); err != nil { … }     // skipped on inf/NaN
//		if err := sc.Update(); err != nil { … }
//		opt.ZeroGrad()
//	}
package amp
