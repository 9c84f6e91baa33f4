package amp

import (
	"fmt"

	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
)

// MainGradsF32 makes every trainable F16 or BF16 parameter of ps keep its
// gradient in F32 (autograd's SetGradDType): Megatron-LM's main_grad
// (accumulate_allreduce_grads_in_fp32). Each backward contribution, made
// in the parameter's 16-bit dtype, is widened and added into the F32
// gradient, so micro-batches accumulate in F32; data parallelism (package
// parallel's DDP, which takes the gradients' dtype from the parameters)
// reduces them in F32; and an optimizer with master weights updates its
// F32 master from the F32 gradient directly. It returns the number of
// parameters changed; F32 and F64 parameters and buffers are left as they
// are. Call it after building the model and before wrapping it in a DDP
// or making its optimizer, with no gradients held (it fails on a
// parameter holding a 16-bit gradient).
//
// Memory: 4 bytes of gradient per 16-bit parameter instead of 2, so Adam
// with master weights holds 2 + 4 + 12 = 18 bytes per parameter (6 + 12/N
// under ZeRO stage 1 over N ranks: Megatron's distributed optimizer),
// plus, while backward runs, each parameter's 16-bit contribution until it
// is added (workspace).
func MainGradsF32(ps []nn.Param) (int, error) {
	n := 0
	for _, p := range ps {
		if p.Buffer || p.T == nil || !p.T.DType().IsLowPrecision() {
			continue
		}
		if g := p.T.Grad(); g != nil && g.DType() != dtype.F32 {
			return n, fmt.Errorf("amp: f32 gradients: parameter %q holds a %s gradient: call before backward (or after ZeroGrad)", p.Name, g.DType())
		}
		p.T.SetGradDType(dtype.F32)
		n++
	}
	return n, nil
}
