package device

import (
	"fmt"

	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// UnaryOp is an elementwise function of one operand and a scalar argument.
// The comment of each says which forward values its gradient reads (x: the
// input, y: the output).
type UnaryOp uint8

// The unary ops.
const (
	Neg       UnaryOp = iota // -x; grad reads nothing
	Abs                      // |x|; grad reads x
	Exp                      // e^x; grad reads y
	Log                      // ln x; grad reads x
	Sqrt                     // √x; grad reads y
	Rsqrt                    // 1/√x; grad reads y
	Tanh                     // tanh x; grad reads y
	Sigmoid                  // 1/(1+e^-x); grad reads y
	Relu                     // max(x, 0); grad reads y
	GeluTanh                 // x/2·(1+tanh(√(2/π)(x+0.044715x³))); grad reads x
	GeluErf                  // x/2·(1+erf(x/√2)); grad reads x
	Pow                      // x^arg; grad reads x
	Scale                    // x·arg; grad reads nothing
	AddScalar                // x+arg; grad reads nothing
	NumUnaryOps
)

var unaryNames = [NumUnaryOps]string{"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu_tanh", "gelu_erf", "pow", "scale", "add_scalar"}

// String returns the op's name.
func (op UnaryOp) String() string {
	if op < NumUnaryOps {
		return unaryNames[op]
	}
	return "unary?"
}

// BinaryOp is an elementwise function of two operands.
type BinaryOp uint8

// The binary ops.
const (
	Add BinaryOp = iota
	Sub
	Mul
	Div
	Maximum
	Minimum
	Eq
	Ne
	Lt
	Le
	Gt
	Ge
	NumBinaryOps
)

var binaryNames = [NumBinaryOps]string{"add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"}

// String returns the op's name.
func (op BinaryOp) String() string {
	if op < NumBinaryOps {
		return binaryNames[op]
	}
	return "binary?"
}

// ReduceOp is a reduction over axes.
type ReduceOp uint8

// The reductions.
const (
	Sum ReduceOp = iota
	Mean
	Max
	Min
	Var
	ArgMax
	NumReduceOps
)

var reduceNames = [NumReduceOps]string{"sum", "mean", "max", "min", "var", "argmax"}

// String returns the reduction's name.
func (op ReduceOp) String() string {
	if op < NumReduceOps {
		return reduceNames[op]
	}
	return "reduce?"
}

// Gemm describes C = alpha·op(A)·op(B) + beta·C over Batch matrices, in
// BLAS's row-major terms: op(A) is M×K, op(B) is K×N, C is M×N; matrix i of
// each operand starts StrideX elements after matrix i-1 (0 reuses one
// matrix for the whole batch). LdX is the row stride of each stored matrix.
// With Beta 0, C's old contents are ignored (even NaN).
//
// Bias, when its Block is set, is a contiguous vector of N elements of
// C's dtype on C's device, added to every row of every C in the GEMM's
// own store: C = alpha·op(A)·op(B) + (beta·C + Bias[j]). The bias joins
// beta·C before the product does, so with Beta 0 the result is, bit for
// bit, that of copying the bias into every row of C and running with Beta
// 1, without that pass over C.
type Gemm struct {
	TransA, TransB bool
	M, N, K        int
	Alpha, Beta    float64
	A, B, C        Operand
	Bias           Operand
	LdA, LdB, LdC  int
	Batch          int
	StrideA        int
	StrideB        int
	StrideC        int
}

// CheckBias returns an error unless Bias is unset or a contiguous vector
// of N elements of C's dtype on C's device, inside its block.
func (g Gemm) CheckBias() error {
	b := g.Bias
	switch {
	case b.Block == nil:
		return nil
	case b.DType != g.C.DType:
		return fmt.Errorf("gemm bias: dtype %s, want C's %s", b.DType, g.C.DType)
	case g.C.Block != nil && b.Block.Device() != g.C.Block.Device():
		return fmt.Errorf("gemm bias: on another device than C")
	case b.Len() != g.N || !b.Contiguous():
		return fmt.Errorf("gemm bias: shape %v strides %v, want %d contiguous elements (N)", b.Shape, b.Strides, g.N)
	case b.Off < 0 || int64(b.Off+g.N)*int64(b.DType.Size()) > b.Block.Len():
		return fmt.Errorf("gemm bias: elements [%d, %d) outside its block of %d bytes", b.Off, b.Off+g.N, b.Block.Len())
	}
	return nil
}

// Conv2d describes a 2-D convolution in NCHW layout: input (N, C, H, W),
// weight (K, C/Groups, R, S), output (N, K, OH, OW).
type Conv2d struct {
	N, C, H, W       int
	K, R, S          int
	StrideH, StrideW int
	PadH, PadW       int
	DilH, DilW       int
	Groups           int
	OH, OW           int
}

// OutSize fills OH and OW from the other fields.
func (p *Conv2d) OutSize() {
	p.OH = (p.H+2*p.PadH-p.DilH*(p.R-1)-1)/p.StrideH + 1
	p.OW = (p.W+2*p.PadW-p.DilW*(p.S-1)-1)/p.StrideW + 1
}

// Pointwise reports whether the convolution is a 1×1, stride-1, unpadded
// one, which needs no im2col.
func (p Conv2d) Pointwise() bool {
	return p.R == 1 && p.S == 1 && p.StrideH == 1 && p.StrideW == 1 && p.PadH == 0 && p.PadW == 0
}

// Workspace returns the elements of one sample's im2col matrix for one
// group, (C/G·R·S)×(OH·OW), and none for pointwise convolutions: the
// scratch the cuda kernels use (the workspaces below are at least that).
func (p Conv2d) Workspace() int {
	if p.Pointwise() {
		return 0
	}
	return p.C / p.Groups * p.R * p.S * p.OH * p.OW
}

// ForwardWorkspace returns the elements of Conv2d's workspace for
// operands of dtype dt, counted in its compute dtype (F64 for F64, else
// F32): the larger of what the cpu kernels lay out in it
// (kernels.ConvWorkspace: the packed filters, G·rows(K/G)·C/G·R·S with
// rows(m) = max(⌈m/12⌉·12, ⌈m/32⌉·32), and one tile for each of at most
// kernels.ConvSlots() workers, 8 up to 8 cores, plus 16 for alignment) and Workspace(),
// what the cuda kernels use. It depends on the convolution and dt alone,
// not on the backend or the machine, so meta accounts the same bytes.
func (p Conv2d) ForwardWorkspace(dt dtype.DType) int {
	return max(p.Workspace(), p.cpuWorkspace(kernels.ConvForward, dt))
}

// GradInputWorkspace is ForwardWorkspace for Conv2dGradInput: the cpu
// kernels' packed filters are G·blocks·rows(block·R·S)·K/G elements (a
// block of channels per unit), and a BF16 or F16 input gradient that may
// run as the forward convolution by flipped filters takes the larger of
// the two routes.
func (p Conv2d) GradInputWorkspace(dt dtype.DType) int {
	return max(p.Workspace(), p.cpuWorkspace(kernels.ConvGradInput, dt))
}

// GradWeightWorkspace is ForwardWorkspace for Conv2dGradWeight: the cpu
// kernels hold no packed filters but up to 7 copies of a small dw (one
// per chunk of samples after the first, each K·C/G·R·S) and, for 16-bit
// operands, the F32 dw the samples are summed in; the cuda kernels' need
// is Workspace(), except that a 16-bit pointwise convolution takes
// K/G·C/G, room for one group's weight gradient summed over the samples
// in F32.
func (p Conv2d) GradWeightWorkspace(dt dtype.DType) int {
	cuda := p.Workspace()
	if dt.IsLowPrecision() && p.Pointwise() && p.Groups > 0 {
		cuda = p.K / p.Groups * (p.C / p.Groups)
	}
	return max(cuda, p.cpuWorkspace(kernels.ConvGradWeight, dt))
}

// cpuWorkspace is kernels.ConvWorkspace for operands of dtype dt.
func (p Conv2d) cpuWorkspace(kind kernels.ConvKind, dt dtype.DType) int {
	op := kernels.ConvF32
	switch {
	case dt == dtype.F64:
		op = kernels.ConvF64
	case dt.IsLowPrecision():
		op = kernels.ConvHalf
	}
	return kernels.ConvWorkspace(kind, kernels.ConvArgs(p), op)
}

// Pool2d describes a 2-D pooling window over (N, C, H, W) → (N, C, OH, OW).
type Pool2d struct {
	N, C, H, W int
	KH, KW     int
	SH, SW     int
	PH, PW     int
	DH, DW     int
	OH, OW     int
	// CountPad includes padding in AvgPool2d's divisor (PyTorch's
	// count_include_pad=True; autograd's PoolOptions sets it unless
	// ExcludePad).
	CountPad bool
}

// OutSize fills OH and OW (floor mode).
func (p *Pool2d) OutSize() {
	p.OH = (p.H+2*p.PH-p.DH*(p.KH-1)-1)/p.SH + 1
	p.OW = (p.W+2*p.PW-p.DW*(p.KW-1)-1)/p.SW + 1
}
