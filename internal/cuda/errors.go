package cuda

import (
	"errors"
	"fmt"
)

// Sentinel errors for what is missing. Match them with errors.Is.
var (
	// ErrNoDriver: libcuda (the NVIDIA driver) could not be loaded, or it
	// lacks a symbol the bindings need, or cuInit failed (no GPU).
	ErrNoDriver = errors.New("no CUDA driver")
	// ErrNoNVRTC: libnvrtc (the run-time compiler) could not be loaded.
	ErrNoNVRTC = errors.New("no NVRTC")
	// ErrNoCublas: libcublas or libcublasLt could not be loaded.
	ErrNoCublas = errors.New("no cuBLAS")
	// ErrNoDevice: the driver loaded but has no device of that index.
	ErrNoDevice = errors.New("no such CUDA device")
	// ErrUnsupported: the op or feature is not available on this device.
	ErrUnsupported = errors.New("not supported on CUDA")
)

// Driver and cuBLAS result codes that callers test for, as sentinels:
// errors.Is(err, ErrOutOfMemory) holds for an *Error of that code from any
// call.
var (
	ErrOutOfMemory   = &Error{Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY"}
	ErrNotSupported  = &Error{Code: 801, Name: "CUDA_ERROR_NOT_SUPPORTED"}
	ErrLaunchFailed  = &Error{Code: 719, Name: "CUDA_ERROR_LAUNCH_FAILED"}
	ErrNoDeviceFound = &Error{Code: 100, Name: "CUDA_ERROR_NO_DEVICE"}
)

// Error is a failed call of the driver, NVRTC or cuBLAS: the call, its
// result code and the code's name (and description, where the library
// gives one).
type Error struct {
	// Call names the function, for example "cuMemCreate".
	Call string
	// Code is the result code (CUresult, nvrtcResult or cublasStatus_t).
	Code int
	// Name is the code's name, for example "CUDA_ERROR_OUT_OF_MEMORY".
	Name string
	// Desc is the library's description of the code, if any.
	Desc string
}

// Error renders the call, the code's name and number and the description.
func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
	if e.Call == "" {
		s = fmt.Sprintf("%s (%d)", e.Name, e.Code)
	}
	if e.Desc != "" {
		s += ": " + e.Desc
	}
	return s
}

// Is matches a sentinel *Error (one without Call) of the same code and
// library family (the name's prefix).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Call == "" && t.Code == e.Code && family(t.Name) == family(e.Name)
}

// family returns the prefix of a code name that says which library it is
// from: "CUDA", "NVRTC" or "CUBLAS".
func family(name string) string {
	for i := range len(name) {
		if name[i] == '_' {
			return name[:i]
		}
	}
	return name
}

// LoadError is a library that could not be loaded or a symbol it lacks. It
// unwraps to the library's sentinel (ErrNoDriver, ErrNoNVRTC, ErrNoCublas).
type LoadError struct {
	// Lib is the library's name or the paths tried.
	Lib string
	// Symbol is the missing symbol; empty when the library itself failed.
	Symbol string
	// Detail is the loader's message.
	Detail string
	kind   error
}

// Error names the library, the symbol and why.
func (e *LoadError) Error() string {
	if e.Symbol != "" {
		return fmt.Sprintf("%v: %s has no symbol %s", e.kind, e.Lib, e.Symbol)
	}
	return fmt.Sprintf("%v: %s", e.kind, e.Detail)
}

// Unwrap returns the library's sentinel.
func (e *LoadError) Unwrap() error { return e.kind }

// CompileError is a kernel source that NVRTC rejected, with its log.
type CompileError struct {
	// Source is the file name of the unit; Arch the target.
	Source, Arch string
	// Log is NVRTC's program log.
	Log string
	// Err is the failing call's error.
	Err error
}

// Error names the source and target and includes the log.
func (e *CompileError) Error() string {
	return fmt.Sprintf("nvrtc: compiling %s for %s: %v\n%s", e.Source, e.Arch, e.Err, e.Log)
}

// Unwrap returns the failing call's error.
func (e *CompileError) Unwrap() error { return e.Err }
