package dtype

import (
	"fmt"
	"strconv"
	"strings"
)

// DType names the element type of a tensor's storage. The zero value is
// Invalid, so a forgotten field is caught rather than silently read as a
// real type.
type DType uint8

// The element types. Their numeric values are part of the API only in the
// sense that All returns them in this order.
const (
	// Invalid is the zero value: not a dtype.
	Invalid DType = iota
	// F64 is an IEEE 754 binary64 float (Go float64), 8 bytes.
	F64
	// F32 is an IEEE 754 binary32 float (Go float32), 4 bytes.
	F32
	// F16 is an IEEE 754 binary16 float, 2 bytes, stored as a uint16.
	F16
	// BF16 is a bfloat16: the top 16 bits of an F32, 2 bytes, stored as a
	// uint16.
	BF16
	// I8 is a signed 8-bit integer (Go int8), 1 byte.
	I8
	// I32 is a signed 32-bit integer (Go int32), 4 bytes.
	I32
	// I64 is a signed 64-bit integer (Go int64), 8 bytes.
	I64
)

// numDTypes is one past the last valid dtype.
const numDTypes = I64 + 1

var (
	sizes = [numDTypes]int{Invalid: 0, F64: 8, F32: 4, F16: 2, BF16: 2, I8: 1, I32: 4, I64: 8}
	names = [numDTypes]string{
		Invalid: "invalid", F64: "f64", F32: "f32", F16: "f16", BF16: "bf16",
		I8: "i8", I32: "i32", I64: "i64",
	}
)

// aliases maps every accepted lower-case spelling to its dtype. The
// canonical names are added by init.
var aliases = map[string]DType{
	"float64":  F64,
	"double":   F64,
	"float32":  F32,
	"float":    F32,
	"fp32":     F32,
	"float16":  F16,
	"half":     F16,
	"fp16":     F16,
	"bfloat16": BF16,
	"int8":     I8,
	"int32":    I32,
	"int64":    I64,
}

func init() {
	for _, d := range All() {
		aliases[names[d]] = d
	}
}

// Size returns the number of bytes one element of d occupies: 8 for F64
// and I64, 4 for F32 and I32, 2 for F16 and BF16, 1 for I8, and 0 for
// Invalid or any value outside the defined constants.
func (d DType) Size() int {
	if d >= numDTypes {
		return 0
	}
	return sizes[d]
}

// String returns the canonical short name of d ("f64", "f32", "f16",
// "bf16", "i8", "i32", "i64"), "invalid" for Invalid, and "dtype(N)" for an
// undefined value N.
func (d DType) String() string {
	if d >= numDTypes {
		return "dtype(" + strconv.Itoa(int(d)) + ")"
	}
	return names[d]
}

// IsFloat reports whether d is a floating-point type: F64, F32, F16 or
// BF16.
func (d DType) IsFloat() bool {
	switch d {
	case F64, F32, F16, BF16:
		return true
	}
	return false
}

// IsLowPrecision reports whether d is one of the 16-bit float types, F16 or
// BF16, whose arithmetic is normally carried out in F32.
func (d DType) IsLowPrecision() bool {
	return d == F16 || d == BF16
}

// Valid reports whether d is one of the seven defined element types.
func (d DType) Valid() bool {
	return d > Invalid && d < numDTypes
}

// All returns the seven valid dtypes in declaration order: F64, F32, F16,
// BF16, I8, I32, I64. The caller owns the returned slice.
func All() []DType {
	return []DType{F64, F32, F16, BF16, I8, I32, I64}
}

// Parse returns the dtype named by s. It accepts the canonical names
// returned by String and the aliases float64, double, float32, float, fp32,
// float16, half, fp16, bfloat16, int8, int32 and int64, in any letter case.
// Surrounding white space is not trimmed. For anything else it returns
// Invalid and an error that quotes s and lists the accepted names.
func Parse(s string) (DType, error) {
	if d, ok := aliases[strings.ToLower(s)]; ok {
		return d, nil
	}
	return Invalid, fmt.Errorf("dtype.Parse: unknown dtype %q; valid names: "+
		"f64 (float64, double), f32 (float32, float, fp32), "+
		"f16 (float16, half, fp16), bf16 (bfloat16), "+
		"i8 (int8), i32 (int32), i64 (int64)", s)
}
