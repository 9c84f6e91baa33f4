//go:build !amd64 || noasm

package kernels

import (
	"unsafe"

	"github.com/headroom-ml/headroom/dtype"
)

// Without the assembly, CPU reports no features and these are never
// called; they convert with package dtype all the same.

func f32ToF16Asm(dst *uint16, src *float32, n int) {
	dtype.F32ToF16(unsafe.Slice(dst, n), unsafe.Slice(src, n))
}

func f16ToF32Asm(dst *float32, src *uint16, n int) {
	dtype.F16ToF32s(unsafe.Slice(dst, n), unsafe.Slice(src, n))
}

func f32ToBF16Asm(dst *uint16, src *float32, n int) {
	dtype.F32ToBF16(unsafe.Slice(dst, n), unsafe.Slice(src, n))
}

func bf16ToF32Asm(dst *float32, src *uint16, n int) {
	dtype.BF16ToF32s(unsafe.Slice(dst, n), unsafe.Slice(src, n))
}
