// Package autograd is headroom's tensor library: an eager, define-by-run,
// reverse-mode automatic differentiation engine whose memory is exact and
// deterministic.
//
// # Tensors, devices and ownership
//
// A Tensor is a handle on device memory (a reference-counted device.Block)
// with a shape, strides and a dtype. Every byte comes from a device's
// allocator with a label — its tag (parameter, gradient, activation,
// workspace, …), the op that made it, the layer path and the step phase —
// so the device can say at any moment where its memory is and why.
//
// Memory comes back when the last reference goes, never when Go's garbage
// collector gets round to it:
//
//   - Tensors made outside any scope (parameters, optimizer state, buffers)
//     are owned by the caller, who calls Release.
//   - Tensors made by ops from a Scope's tensors belong to that Scope. A
//     training step runs in one; Scope.Release frees everything the step
//     made. Code may Release an intermediate earlier (the nn layers do), and
//     should: what a handle still holds cannot be freed by backward.
//   - The engine frees each tensor an op saved for backward as soon as that
//     op's backward has run, and each intermediate gradient as soon as it
//     has been consumed.
//   - A leaf's gradient (Grad) belongs to the leaf; ZeroGrad frees it.
//
// Device.Live and Device.Leaks report what is still held, by tag and
// creator; after a step's Scope is released only parameters, gradients and
// optimizer state should remain.
//
// # Intermediates nobody saves
//
// An op's output that the next op does not save — a Linear's output under
// a ReLU, which saves its own output; a batch-norm's under a ReLU — is
// needed by nothing once the next op has run, yet its handle and the
// step's scope keep it alive: the PyTorch habit fc.Forward(x).ReLU() holds
// both outputs until Scope.Release (PyTorch frees the first when its
// Python reference dies; Go cannot see whether a *Tensor is still held, so
// nothing here frees a tensor behind its holder's back). Two explicit
// ways give it back: Release it after its consumer ran (nn.Sequential and
// the nn layers do), or write the activation over it with ReLUInPlace,
// SigmoidInPlace or TanhInPlace (torch.relu_), which allocate nothing —
// the better of the two, since the peak never holds both; they refuse a
// tensor that an op saved, a view shares or that is a parameter, so they
// cannot corrupt a gradient. To make the waste visible, a saved tensor's
// reference is counted on its block (device.Block.RetainSaved), and
// Device.Unsaved, Device.Summary and the OOM report list the live
// activation bytes that no node saves, by creator: "activation held only
// by the scope (saved by no node)". In Linear→ReLU→Linear→cross-entropy
// they are exactly the first linear's output and the loss.
//
// # A training step
//
//	s := autograd.NewScope()
//	x := s.FromFloat32s(dev, []int{B, D}, batch)      // input, tagged activation
//	h := autograd.Linear(x, w1, b1)                     // saves x
//	r := h.ReLU()                                       // saves r
//	h.Release()                                         // nobody saved h: its memory returns now
//	logits := autograd.Linear(r, w2, b2)                // saves r (already alive)
//	loss := autograd.CrossEntropy(logits, y, autograd.CEOptions{})
//	if err := loss.Backward(); err != nil { … }         // frees saved tensors as it goes
//	value := loss.Item()
//	s.Release()                                         // everything the step made
//	for _, p := range params { p.AddInPlace(p.Grad(), -lr); p.ZeroGrad() }
//
// # Scopes instead of global modes
//
// Grad mode (Scope.NoGrad), the layer path that labels allocations
// (Scope.Enter), the step phase, and the saved-tensor hooks (the mechanism
// behind activation offload and checkpointing) all belong to a Scope, not to
// the package: two goroutines with two scopes train two models at once. A
// scope belongs to one goroutine at a time (handing it over through a
// channel is fine); using one from two goroutines at once makes an op fail
// with *Error rather than corrupt it (see Scope). An op finds its scope
// through its inputs (the innermost one when scopes are
// nested with Child). An op whose inputs all are free-standing records no
// graph; if one of them requires grad that is an error, because the gradient
// would be lost silently: attach the tensor with Scope.Use.
//
// # Sharded leaves
//
// A leaf's storage may come and go while the leaf stays the same *Tensor
// that modules, optimizers and graph edges hold: Unbind drops it, Bind
// points the leaf at a view of another buffer without copying, SetFetch
// gives the leaf a function that binds it when an op finds it unbound,
// and SetSavedHooks makes ops that save the leaf for backward pack it with
// the leaf's own hooks (a reference instead of its storage). ZeRO stage 3
// (package parallel) keeps each parameter sharded this way and gathers it
// only while it is used. Autocast's cast of such a leaf holds storage only
// while the leaf is bound and is saved through the leaf's hooks
// (castshard.go), so no 16-bit copy outlives the gathered buffer.
//
// # Fused linear cross-entropy
//
// LinearCrossEntropy(x, w, b, target, o) is CrossEntropy(Linear(x, w, b))
// without the (N, V) logits: it computes them o.Chunk rows at a time
// (DefaultLCEChunk, 256, when 0; not yet chosen by a speed measurement)
// into one workspace, saves only the per-row log-sum-exp (N floats) beside
// x, w and b, and recomputes each chunk's logits in backward. The trade is
// one more head GEMM per step (the forward's, again in backward) for
// memory: the loss's peak holds 2·chunk·V elements (a chunk's logits and
// their gradient, in backward) instead of the 2·N·V of the plain path
// (logits saved and their gradient), plus N for the log-sum-exp.
//
// # Devices
//
// Ops never touch device memory themselves. They allocate through the
// device and call its device.Kernels; on the meta device, which has no
// kernels, the same code allocates exactly the same blocks and computes
// nothing, which is how a training step of a model far larger than the
// machine is measured before it runs. Reading values (Item, Float32s) is an
// explicit copy to the host; meta tensors read as zeros.
//
// # Errors
//
// Misuse (shapes that do not fit, a released tensor, backward through a
// freed graph) panics with *Error naming the op and the shapes; running out
// of memory panics with *device.OOMError. Backward, BackwardWith and Try
// return both as errors; any other panic is a bug and propagates.
//
// A failure gives back what the failed work made. A Backward that returns
// an error has already released every gradient and temporary it made (the
// leaves keep what reached them: ZeroGrad), and what an op allocates —
// its outputs, its workspace, the views a backward step takes of saved
// tensors — belongs to the scope, so Scope.Release (Scope.Run releases
// whatever happens) leaves the device holding exactly what it held before
// the step. Scope.LogRNG and RewindRNG put the generators a step drew from
// back, so that a failed step retried draws the same masks.
//
// # Precision
//
// Ops compute F64 and F32. F16 and BF16 tensors are stored in 2 bytes and
// computed in F32. An op's operands share one dtype: F32 with F64, or a
// float with an integer, is an *Error naming the op, both dtypes and where
// each tensor came from — an F64 batch into an F32 model fails at the
// first op instead of making every activation F64 — and float ops refuse
// integers. Floats mix only under autocast (an F32 residual plus a BF16
// linear output gives F32: the wider float, F32 for F16 with BF16) and
// inside backward; operands whose contract takes another dtype (indices,
// integer targets, conditions, masks, running statistics) are exempt.
package autograd
