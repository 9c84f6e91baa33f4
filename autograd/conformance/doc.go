// Package conformance is the one test suite every device must pass: the
// ops of the MLP and transformer path, run forward and backward on the
// device under test and checked against the same computation on the cpu
// device in F64, with the device's memory accounting checked byte for
// byte against a meta device's (gonum's testblas pattern: one suite, many
// implementations).
//
// A device's test file calls Run with a function that opens a fresh device:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, func(t testing.TB) *device.Device {
//			d := cpu.New(0, device.Options{})
//			t.Cleanup(func() { d.Close() })
//			return d
//		}, conformance.Options{})
//	}
//
// device/cpu, device/meta (Options.NoData: accounting only) and
// device/cuda (the emulated device always, a real GPU with
// HEADROOM_CUDA_REAL=1) run it.
//
// # What each case checks
//
// Every case (matmul and linear, batched and broadcast; unary and
// broadcasting binary elementwise ops, where and masked fill; sum, mean,
// max, min, var, argmax; softmax and log-softmax over any dimension;
// layer norm; cross-entropy with ignore index, label smoothing and every
// reduction; embedding and index select; dropout, whose mask must equal
// cpu's for the same seed; scaled-dot-product attention, causal or not;
// reshape, permute, transpose, slice, expand, concat and split feeding
// ops; To round trips through a host device) runs, in each dtype of
// Options.DTypes (default F32, F64, BF16, F16):
//
//   - values: the output and the gradient of every input (backward seeded
//     with a fixed random output gradient) against cpu F64 on the same
//     inputs (rounded to the dtype first), within Tolerances[dtype];
//     integer outputs (argmax) must be equal. Matmul, linear and attention
//     run in F16 and BF16 under Scope.Autocast with F32 inputs, as a model
//     does; the other ops store their inputs in the 16-bit dtype.
//   - accounting: Stats.Requested, Allocated and every tag's counter
//     (current, peak, totals, counts) and AtPeak equal the reference
//     device's (meta for a computing device, cpu for meta) after the
//     inputs are made, after forward, after backward, after the scope is
//     released, after the gradients are freed and after the inputs are
//     released — counted from the step's start (ResetPeak), less what the
//     device held before it of its own (a cuda device's cuBLAS workspace).
//   - leaks: after each step the device holds exactly what it held
//     before it (Device.Leaks is empty on cpu and meta), and so does the
//     host device of the transfers.
//   - OOM (first dtype only): with the capacity one byte below the step's
//     peak of Stats.Allocated the step fails with *device.OOMError and
//     leaves the device holding exactly what it held before it (Live
//     equal); at the peak it succeeds.
//
// SGD (plain and Nesterov with weight decay), Adam and AdamW (package
// optim; with master weights in F16 and BF16) run three steps, the
// parameters checked against cpu F64 and the accounting against the
// reference device after each step.
//
// # Tolerances
//
// Tolerances holds one bound per dtype: |got − want| ≤ Atol·scale +
// Rtol·|want|, scale the largest |want| of the tensor (at least 1).
//
// # Cost
//
// 61 op cases and 4 optimizers × 4 dtypes, each a few steps of tensors of
// at most a few dozen elements: 0.3 s on the cpu device and 3 s on the
// emulated cuda device (2 cores; go test -count=1 -run Conformance).
package conformance
