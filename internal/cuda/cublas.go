package cuda

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// cuBLAS constants used by the bindings.
const (
	OpN = 0 // CUBLAS_OP_N
	OpT = 1 // CUBLAS_OP_T

	R32F  = 0  // CUDA_R_32F
	R64F  = 1  // CUDA_R_64F
	R16F  = 2  // CUDA_R_16F
	R16BF = 14 // CUDA_R_16BF

	Compute32F     = 68 // CUBLAS_COMPUTE_32F
	Compute32FTF32 = 77 // CUBLAS_COMPUTE_32F_FAST_TF32
	Compute64F     = 70 // CUBLAS_COMPUTE_64F

	GemmDefault = -1 // CUBLAS_GEMM_DEFAULT

	MathDefault  = 0 // CUBLAS_DEFAULT_MATH
	MathPedantic = 2 // CUBLAS_PEDANTIC_MATH
	MathTF32     = 3 // CUBLAS_TF32_TENSOR_OP_MATH
)

// Cublas is the loaded cuBLAS library, and cuBLASLt beside it (bound only
// for create, destroy and version: headroom's GEMMs go through GemmEx).
type Cublas struct {
	lib, lt *handle
	// Version is cublasGetVersion's value (set by the first NewHandle);
	// LtVersion cublasLtGetVersion's.
	Version, LtVersion int
	version            sync.Once // devices open concurrently: Version is written once

	create, destroy, setStream, setWorkspace, setMath, getVersion uintptr
	ltCreate, ltDestroy, ltVersion                                uintptr

	gemmEx func(h uintptr, ta, tb, m, n, k int32, alpha unsafe.Pointer, a uintptr, at int32, lda int32,
		b uintptr, bt int32, ldb int32, beta unsafe.Pointer, c uintptr, ct int32, ldc int32, compute int32, algo int32) int32
	gemmBatched func(h uintptr, ta, tb, m, n, k int32, alpha unsafe.Pointer, a uintptr, at int32, lda int32, sa int64,
		b uintptr, bt int32, ldb int32, sb int64, beta unsafe.Pointer, c uintptr, ct int32, ldc int32, sc int64,
		batch int32, compute int32, algo int32) int32
}

var (
	cublasOnce sync.Once
	cublas     *Cublas
	cublasErr  error
)

// LoadCublas loads libcublas and libcublasLt once per process.
func LoadCublas() (*Cublas, error) {
	cublasOnce.Do(func() { cublas, cublasErr = loadCublas() })
	return cublas, cublasErr
}

func loadCublas() (*Cublas, error) {
	lt, err := libCublasLt.open()
	if err != nil {
		return nil, err
	}
	h, err := libCublas.open()
	if err != nil {
		return nil, err
	}
	c := &Cublas{lib: h, lt: lt}
	var gemm, batched uintptr
	if err := h.bind([]symbol{
		{"cublasCreate_v2", &c.create}, {"cublasDestroy_v2", &c.destroy},
		{"cublasSetStream_v2", &c.setStream}, {"cublasSetWorkspace_v2", &c.setWorkspace},
		{"cublasSetMathMode", &c.setMath}, {"cublasGetVersion_v2", &c.getVersion},
		{"cublasGemmEx", &gemm}, {"cublasGemmStridedBatchedEx", &batched},
	}); err != nil {
		return nil, err
	}
	if err := lt.bind([]symbol{{"cublasLtCreate", &c.ltCreate}, {"cublasLtDestroy", &c.ltDestroy}, {"cublasLtGetVersion", &c.ltVersion}}); err != nil {
		return nil, err
	}
	// GemmEx has 19 parameters and the batched form 23, more than SyscallN
	// takes: they are bound by RegisterFunc, whose pointer is already known
	// to exist (it would panic on a missing one).
	purego.RegisterFunc(&c.gemmEx, gemm)
	purego.RegisterFunc(&c.gemmBatched, batched)
	r, _, _ := purego.SyscallN(c.ltVersion)
	c.LtVersion = int(r)
	return c, nil
}

func (c *Cublas) check(name string, r uintptr) error {
	code := int(int32(r))
	if code == 0 {
		return nil
	}
	return &Error{Call: name, Code: code, Name: cublasStatus(code)}
}

func cublasStatus(code int) string {
	names := map[int]string{1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
		8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
		14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED"}
	if n, ok := names[code]; ok {
		return n
	}
	return fmt.Sprintf("CUBLAS_STATUS_%d", code)
}

// Handle is a cuBLAS handle with its cuBLASLt handle.
type Handle struct {
	c     *Cublas
	h, lt uintptr
	tf32  bool
	alpha [2]float64 // value cells of alpha and beta
	beta  [2]float64
}

// NewHandle creates a cuBLAS handle (and a cuBLASLt one) in the current
// context, bound to stream s, pedantic math unless tf32 allows TF32 tensor
// cores for F32.
func (c *Cublas) NewHandle(s Stream, tf32 bool) (*Handle, error) {
	h := &Handle{c: c, tf32: tf32}
	if err := c.check("cublasCreate_v2", sys(c.create, uintptr(unsafe.Pointer(&h.h)))); err != nil {
		return nil, err
	}
	var v int32
	if err := c.check("cublasGetVersion_v2", sys(c.getVersion, h.h, uintptr(unsafe.Pointer(&v)))); err == nil {
		c.version.Do(func() { c.Version = int(v) })
	}
	mode := MathPedantic
	if tf32 {
		mode = MathTF32
	}
	for _, e := range []error{
		c.check("cublasSetStream_v2", sys(c.setStream, h.h, uintptr(s))),
		c.check("cublasSetMathMode", sys(c.setMath, h.h, uintptr(mode))),
		c.check("cublasLtCreate", sys(c.ltCreate, uintptr(unsafe.Pointer(&h.lt)))),
	} {
		if e != nil {
			h.Destroy()
			return nil, e
		}
	}
	return h, nil
}

//go:uintptrescapes
func sys(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// SetWorkspace gives cuBLAS n bytes at p as its workspace.
func (h *Handle) SetWorkspace(p DevPtr, n int64) error {
	return h.c.check("cublasSetWorkspace_v2", sys(h.c.setWorkspace, h.h, uintptr(p), uintptr(n)))
}

// Destroy destroys the handles.
func (h *Handle) Destroy() {
	if h.lt != 0 {
		sys(h.c.ltDestroy, h.lt)
		h.lt = 0
	}
	if h.h != 0 {
		sys(h.c.destroy, h.h)
		h.h = 0
	}
}

// Gemm is one column-major cublasGemmStridedBatchedEx call (cublasGemmEx
// when Batch is 1): C = alpha·op(A)·op(B) + beta·C.
type Gemm struct {
	TransA, TransB   int
	M, N, K          int
	Alpha, Beta      float64
	A, B, C          DevPtr
	LdA, LdB, LdC    int
	StrideA, StrideB int64
	StrideC          int64
	Batch            int
	Type             int  // CUDA_R_* of A and B, and of C unless C32
	C32              bool // C is CUDA_R_32F (A and B 16-bit: F32 output)
}

// Gemm queues g on the handle's stream.
func (h *Handle) Gemm(g Gemm) error {
	compute := int32(Compute32F)
	var alpha, beta unsafe.Pointer
	if g.Type == R64F {
		compute = Compute64F
		h.alpha[0], h.beta[0] = g.Alpha, g.Beta
		alpha, beta = unsafe.Pointer(&h.alpha[0]), unsafe.Pointer(&h.beta[0])
	} else {
		if h.tf32 && g.Type == R32F {
			compute = Compute32FTF32
		}
		a32, b32 := (*float32)(unsafe.Pointer(&h.alpha[0])), (*float32)(unsafe.Pointer(&h.beta[0]))
		*a32, *b32 = float32(g.Alpha), float32(g.Beta)
		alpha, beta = unsafe.Pointer(a32), unsafe.Pointer(b32)
	}
	t, ct := int32(g.Type), int32(g.Type)
	if g.C32 {
		ct = R32F
	}
	var r int32
	name := "cublasGemmEx"
	if g.Batch == 1 {
		r = h.c.gemmEx(h.h, int32(g.TransA), int32(g.TransB), int32(g.M), int32(g.N), int32(g.K), alpha,
			uintptr(g.A), t, int32(g.LdA), uintptr(g.B), t, int32(g.LdB), beta, uintptr(g.C), ct, int32(g.LdC), compute, GemmDefault)
	} else {
		name = "cublasGemmStridedBatchedEx"
		r = h.c.gemmBatched(h.h, int32(g.TransA), int32(g.TransB), int32(g.M), int32(g.N), int32(g.K), alpha,
			uintptr(g.A), t, int32(g.LdA), g.StrideA, uintptr(g.B), t, int32(g.LdB), g.StrideB, beta,
			uintptr(g.C), ct, int32(g.LdC), g.StrideC, int32(g.Batch), compute, GemmDefault)
	}
	return h.c.check(name, uintptr(uint32(r)))
}
