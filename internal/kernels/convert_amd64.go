//go:build amd64 && !noasm

package kernels

// The assembly conversions in convert_amd64.s. n is a positive multiple of
// 8 and both pointers address at least n elements.

//go:noescape
func f32ToF16Asm(dst *uint16, src *float32, n int)

//go:noescape
func f16ToF32Asm(dst *float32, src *uint16, n int)

//go:noescape
func f32ToBF16Asm(dst *uint16, src *float32, n int)

//go:noescape
func bf16ToF32Asm(dst *float32, src *uint16, n int)
