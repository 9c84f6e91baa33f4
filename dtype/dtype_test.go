package dtype

import (
	"strings"
	"testing"
)

// TestSizeStringAndPredicates checks Size, String, IsFloat, IsLowPrecision
// and Valid for every dtype and for undefined values.
func TestSizeStringAndPredicates(t *testing.T) {
	cases := []struct {
		d                   DType
		size                int
		name                string
		float, low, isValid bool
	}{
		{Invalid, 0, "invalid", false, false, false},
		{F64, 8, "f64", true, false, true},
		{F32, 4, "f32", true, false, true},
		{F16, 2, "f16", true, true, true},
		{BF16, 2, "bf16", true, true, true},
		{I8, 1, "i8", false, false, true},
		{I32, 4, "i32", false, false, true},
		{I64, 8, "i64", false, false, true},
		{DType(8), 0, "dtype(8)", false, false, false},
		{DType(255), 0, "dtype(255)", false, false, false},
	}
	for _, c := range cases {
		if got := c.d.Size(); got != c.size {
			t.Errorf("%v.Size() = %d, want %d", c.d, got, c.size)
		}
		if got := c.d.String(); got != c.name {
			t.Errorf("DType(%d).String() = %q, want %q", uint8(c.d), got, c.name)
		}
		if got := c.d.IsFloat(); got != c.float {
			t.Errorf("%v.IsFloat() = %v, want %v", c.d, got, c.float)
		}
		if got := c.d.IsLowPrecision(); got != c.low {
			t.Errorf("%v.IsLowPrecision() = %v, want %v", c.d, got, c.low)
		}
		if got := c.d.Valid(); got != c.isValid {
			t.Errorf("%v.Valid() = %v, want %v", c.d, got, c.isValid)
		}
	}
}

// TestAll checks the order of All and that each call returns a new slice.
func TestAll(t *testing.T) {
	want := []DType{F64, F32, F16, BF16, I8, I32, I64}
	got := All()
	if len(got) != len(want) {
		t.Fatalf("All() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("All()[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	got[0] = Invalid // the caller owns the slice
	if All()[0] != F64 {
		t.Errorf("All() returned shared storage")
	}
}

// TestParse checks every name and alias in several letter cases, and that
// junk is rejected with an error naming the input and the valid names.
func TestParse(t *testing.T) {
	names := map[string]DType{
		"f64": F64, "float64": F64, "double": F64,
		"f32": F32, "float32": F32, "float": F32, "fp32": F32,
		"f16": F16, "float16": F16, "half": F16, "fp16": F16,
		"bf16": BF16, "bfloat16": BF16,
		"i8": I8, "int8": I8,
		"i32": I32, "int32": I32,
		"i64": I64, "int64": I64,
	}
	for name, want := range names {
		for _, s := range []string{name, strings.ToUpper(name), strings.ToUpper(name[:1]) + name[1:]} {
			got, err := Parse(s)
			if err != nil || got != want {
				t.Errorf("Parse(%q) = %v, %v; want %v, nil", s, got, err, want)
			}
		}
	}
	for _, d := range All() {
		if got, err := Parse(d.String()); err != nil || got != d {
			t.Errorf("Parse(%q) = %v, %v; want %v", d.String(), got, err, d)
		}
	}
	for _, junk := range []string{"", "invalid", "f8", "float128", " f32", "f32 ", "int16", "dtype(1)", "bf 16"} {
		got, err := Parse(junk)
		if err == nil {
			t.Errorf("Parse(%q) = %v, nil; want an error", junk, got)
			continue
		}
		if got != Invalid {
			t.Errorf("Parse(%q) returned %v with its error, want Invalid", junk, got)
		}
		msg := err.Error()
		for _, w := range []string{"dtype.Parse", `"` + junk + `"`, "f64", "bf16", "i64", "half"} {
			if !strings.Contains(msg, w) {
				t.Errorf("Parse(%q) error %q does not mention %q", junk, msg, w)
			}
		}
	}
	_, err := Parse("quad")
	t.Logf("sample error: %v", err)
}
