// Package optim updates parameters from their gradients: SGD, Adam and
// AdamW with PyTorch's semantics, global gradient-norm clipping and
// learning-rate schedules. Optimizer state lives on the parameters' device
// under the device.Optimizer tag, so its bytes are counted exactly.
//
// # A training loop
//
//	opt, err := optim.NewAdamW(nn.Trainable(model), optim.AdamConfig{LR: 3e-4})
//	if err != nil { … }
//	defer opt.Release()
//	sched := optim.CosineWarmup{Base: 3e-4, Warmup: 100, Total: 10000}
//	for step := 0; step < 10000; step++ {
//		opt.SetLR(sched.LR(step))
//		s := autograd.NewScope()
//		loss := … // forward in s
//		if err := loss.Backward(); err != nil { … }
//		s.Release()
//		if _, err := optim.ClipGradNorm(nn.Trainable(model), 1.0); err != nil { … }
//		if err := opt.Step(); err != nil { … } // on error nothing changed
//		opt.ZeroGrad()
//	}
//
// # Knobs and defaults
//
// The zero value of every config is PyTorch's defaults:
//
//	AdamConfig  LR 1e-3, Beta1 0.9, Beta2 0.999, Eps 1e-8,
//	            WeightDecay 0 (NewAdam) or 0.01 (NewAdamW)
//	SGDConfig   LR required, Momentum 0, Dampening 0, WeightDecay 0, Nesterov false
//	StepLR      Gamma 0.1 (StepSize required)
//	CosineWarmup Min 0, Warmup 0 (Total required)
//
// A 0 in an AdamConfig field means its default; Zero asks for an actual 0.
//
// # Memory
//
// State tensors have their parameter's shape and dtype and are allocated
// on the first Step that sees the parameter's gradient, all of them before
// any parameter is written, so running out of memory there changes
// nothing. Per parameter element:
//
//	Adam, AdamW      2·size bytes (m and v: 8 per F32 element)
//	SGD, momentum    1·size bytes (the momentum buffer)
//	SGD, no momentum 0
//
// Each state tensor is labelled with its name as op and the parameter's
// name as scope ("fc1.weight/exp_avg") in the device's live and leak
// reports. Step allocates nothing else; ClipGradNorm borrows one F64
// element per gradient while it runs (SumSquares, which the loss scaler's
// overflow check shares: one workspace tensor and one host read per
// device). Release frees the state.
//
// # Kernel launches
//
// Step launches one fused update kernel per parameter (AdamStep or
// SGDStep: every state tensor and the parameter in one pass). With
// MasterWeights the kernel updates the F32 master from the 16-bit gradient
// and a second launch, a Copy, rounds the master into the 16-bit
// parameter: one launch and 6 bytes of traffic an element more than a
// fused write, against the update's 26 (Adam: g, p, m, v read, p, m, v
// written). Fusing it would add the 16-bit parameter as an operand of the
// update kernels of package device, on every backend, to save 62 launches
// a step on a ResNet-18 (one per parameter tensor), against the thousands
// its convolutions launch (an im2col and a GEMM per sample and layer on
// cuda), and 70 MB of traffic (11.7 M elements × 6 bytes) against the
// gigabytes its activations move — so the two launches stay.
//
// # Failures
//
// The constructors refuse parameters of a dtype the update kernels cannot
// write — a 16-bit parameter without MasterWeights, an F32 or F64 one with
// it, an integer one — so that the mistake shows before a forward and
// backward have run, not at the first Step. Step checks every parameter,
// gradient and state tensor and allocates any missing state before it
// writes anything: when it returns an error (a non-contiguous parameter or
// gradient — contiguous views into a flat buffer are fine —, a gradient
// that does not match its parameter, a negative learning rate, no memory
// for the state) no parameter and no state has changed. Load is
// all-or-nothing in the same way.
//
// # Saving
//
// State returns the optimizer's tensors by name — "exp_avg.<param>",
// "exp_avg_sq.<param>", "momentum_buffer.<param>" — and its scalars:
// "step", "lr" and the hyperparameters. Load restores the tensors, the step
// counts and the learning rate into an optimizer made with the same
// hyperparameters over parameters with the same names, shapes and dtypes.
// Saving after n steps and loading into a fresh optimizer continues the run
// bit for bit.
//
// # One parameter at a time
//
// SGD, Adam, AdamW and the 8-bit AdamW are ParamSteppers: StepParam(t)
// applies to one parameter the update the next Step would apply to it,
// with the same kernel, allocating its state if it has none, and returns
// an Undo: copies of the parameter and of its existing state (master copy
// included) as tensors on the host device it is given, allocated through
// that device's allocator (tag optimizer, op UndoOp "step_undo": the
// parameter's bytes + its state's bytes), taken before the update;
// Undo.Restore puts the parameter, its state and its update count back
// bit for bit, Undo.Release keeps the update, and both free the copies
// (on meta the copies are allocated, so planned, but hold no values). The Step that follows updates the
// parameters that still have a gradient and counts the step. The step
// inside backward (train.Stepper.StepInBackward) calls it from a gradient
// hook and frees each gradient at once.
//
// # 8-bit state
//
// NewAdamW8bit and NewAdam8bit (Dettmers et al. 2022) keep m and v of every
// F32 parameter of at least Quant8Config.MinElems elements (default 4096)
// as 8-bit codes of the dynamic quantisation maps, signed for m and
// unsigned for v, with one F32 absmax per Quant8Config.Block elements
// (default 2048): 2n + 8·ceil(n/Block) bytes per parameter instead of 8n,
// tagged optimizer on the parameter's device; smaller parameters keep F32
// state through a plain Adam. Step updates one block at a time in host
// scratch it allocates per call: 4·Block float32 and 2·Block bytes (36 KiB
// at the default block), a bounded constant outside the allocator. The
// arithmetic is the F32 update's; only the rounding of m and v to codes
// differs. The nearest code comes from a bucket table per map (8 KiB each,
// 16 KiB in all, built once at package init, a fixed constant) that gives
// the same code as a binary search over the map. State adds the codes (I8 tensors holding the raw codes), the
// absmax arrays and the scalar "quant_block"; resuming is bit-exact.
//
// With AdamConfig.MasterWeights the parameters are F16 or BF16 and every
// quantised one also keeps an F32 master copy in the optimizer ("master",
// tagged optimizer, the parameter's shape): 4n + 2n + 8·ceil(n/Block)
// bytes of state per quantised parameter (12n for a small one, as plain
// Adam with master weights). A block's update reads the master and the
// 16-bit gradient, widened to F32 through 2·Block more bytes of host
// scratch, writes the master, and a Copy then rounds the whole master into
// the parameter. The masters follow bit for bit the trajectory of an F32
// 8-bit run over parameters equal to them fed the widened gradients
// (TestAdamW8bitMasterEqualsF32). State adds "master.<name>"; a state saved
// with master weights loads only into an optimizer with them.
//
// Sharded (parallel.NewAdamW8bit, ZeRO stages 1–3): every rank's pieces of
// the flat buffer are its parameters, so each rank quantises its own
// blocks, cut from the start of each piece. The layout depends on the
// number of ranks and the buckets: where each piece is whole blocks of the
// one-device layout the run is the one-device run bit for bit, elsewhere
// it differs by where the absmax blocks fall (same error bound per block;
// parallel's TestAdamW8bitZeroEqualsOneDevice and
// TestAdamW8bitZeroUnalignedBlocks). The state per rank is its pieces':
// about 1/N of the one-device bytes.
package optim
