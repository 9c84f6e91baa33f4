package dtype_test

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/dtype"
)

// Every dtype with its size, and which ones are floats.
func ExampleAll() {
	for _, d := range dtype.All() {
		fmt.Printf("%-4v %d bytes float=%v low=%v\n", d, d.Size(), d.IsFloat(), d.IsLowPrecision())
	}
	// Output:
	// f64  8 bytes float=true low=false
	// f32  4 bytes float=true low=false
	// f16  2 bytes float=true low=true
	// bf16 2 bytes float=true low=true
	// i8   1 bytes float=false low=false
	// i32  4 bytes float=false low=false
	// i64  8 bytes float=false low=false
}

// Names are case-insensitive and common aliases are accepted.
func ExampleParse() {
	for _, s := range []string{"float32", "BFloat16", "half", "int64"} {
		d, err := dtype.Parse(s)
		fmt.Println(s, "->", d, err)
	}
	_, err := dtype.Parse("f8")
	fmt.Println(err != nil)
	// Output:
	// float32 -> f32 <nil>
	// BFloat16 -> bf16 <nil>
	// half -> f16 <nil>
	// int64 -> i64 <nil>
	// true
}

// Rounding to half precision: nearest value, ties to even, overflow to
// Inf, underflow to zero.
func ExampleF16FromF32() {
	show := func(x float32) {
		h := dtype.F16FromF32(x)
		fmt.Printf("%-12g -> %#04x = %g\n", x, h, dtype.F16ToF32(h))
	}
	show(1.0 / 3)      // 11 significant bits are kept
	show(1 + 1.0/2048) // halfway between 1 and 1+2^-10: to even, 1
	show(1 + 3.0/2048) // halfway between 1+2^-10 and 1+2^-9: to even, 1+2^-9
	show(65519)        // below the overflow threshold 65520
	show(65520)        // largest finite 65504 plus half a step: Inf
	show(1e-8)         // below half the smallest subnormal 2^-24: zero
	show(-1e-7)        // rounds to the smallest negative subnormal
	// Output:
	// 0.33333334   -> 0x3555 = 0.33325195
	// 1.0004883    -> 0x3c00 = 1
	// 1.0014648    -> 0x3c02 = 1.0019531
	// 65519        -> 0x7bff = 65504
	// 65520        -> 0x7c00 = +Inf
	// 1e-08        -> 0x0000 = 0
	// -1e-07       -> 0x8002 = -1.1920929e-07
}

// bfloat16 keeps F32's range but only 8 significant bits. A NaN stays a
// NaN even when its payload lives only in the low 16 bits.
func ExampleBF16FromF32() {
	b := dtype.BF16FromF32(math.Pi)
	fmt.Printf("%#04x = %g\n", b, dtype.BF16ToF32(b))

	nan := math.Float32frombits(0x7f800001)
	b = dtype.BF16FromF32(nan)
	fmt.Printf("%#04x = %g\n", b, dtype.BF16ToF32(b))
	// Output:
	// 0x4049 = 3.140625
	// 0x7fc0 = NaN
}

// Integer storage truncates toward zero and saturates; NaN becomes 0.
func ExampleFromF32() {
	src := []float32{2.9, -2.9, 300.7, -1000, float32(math.NaN())}
	dst := make([]byte, len(src)*dtype.I8.Size())
	dtype.FromF32(dtype.I8, dst, src)
	fmt.Println(dtype.AsI8(dst))
	// Output:
	// [2 -2 127 -128 0]
}

// FromF64 rounds once, straight from float64. Going through float32 first
// would round x down to the halfway point 1+2^-11 and then, by ties to
// even, to 1.
func ExampleFromF64() {
	x := 1 + math.Pow(2, -11) + math.Pow(2, -30)
	dst := make([]byte, 2)
	dtype.FromF64(dtype.F16, dst, []float64{x})
	fmt.Printf("direct:      %#04x\n", dtype.AsU16(dst)[0])
	fmt.Printf("via float32: %#04x\n", dtype.F16FromF32(float32(x)))
	// Output:
	// direct:      0x3c01
	// via float32: 0x3c00
}

// Reading any storage as float32.
func ExampleToF32() {
	storage := dtype.Bytes([]int32{-7, 1 << 24, 1<<24 + 1})
	dst := make([]float32, 3)
	dtype.ToF32(dst, dtype.I32, storage)
	fmt.Println(dst[0], dst[1], dst[2])
	// Output:
	// -7 1.6777216e+07 1.6777216e+07
}

// AsF32 and Bytes are views: no copying, shared memory.
func ExampleAsF32() {
	storage := make([]byte, 8)
	f := dtype.AsF32(storage)
	f[0] = 1
	fmt.Println(storage[:4], len(dtype.Bytes(f)))
	// Output:
	// [0 0 128 63] 8
}
