package safetensors

import "github.com/headroom-ml/headroom/dtype"

// kind describes one safetensors element type.
type kind struct {
	name string
	bits int         // bits per element
	dt   dtype.DType // the project's dtype, Invalid when there is none
}

// kinds lists every element type of the format in the reference
// implementation's order of increasing alignment (its Dtype enum), which is
// the order the reference writer sorts by. It is never modified.
var kinds = []kind{
	{"BOOL", 8, dtype.Invalid},
	{"F4", 4, dtype.Invalid},
	{"F6_E2M3", 6, dtype.Invalid},
	{"F6_E3M2", 6, dtype.Invalid},
	{"U8", 8, dtype.Invalid},
	{"I8", 8, dtype.I8},
	{"F8_E5M2", 8, dtype.Invalid},
	{"F8_E4M3", 8, dtype.Invalid},
	{"F8_E8M0", 8, dtype.Invalid},
	{"F8_E4M3FNUZ", 8, dtype.Invalid},
	{"F8_E5M2FNUZ", 8, dtype.Invalid},
	{"I16", 16, dtype.Invalid},
	{"U16", 16, dtype.Invalid},
	{"F16", 16, dtype.F16},
	{"BF16", 16, dtype.BF16},
	{"I32", 32, dtype.I32},
	{"U32", 32, dtype.Invalid},
	{"F32", 32, dtype.F32},
	{"C64", 64, dtype.Invalid},
	{"F64", 64, dtype.F64},
	{"I64", 64, dtype.I64},
	{"U64", 64, dtype.Invalid},
}

// lookupKind returns the kind named name and its rank in kinds, or false.
func lookupKind(name string) (kind, int, bool) {
	for i, k := range kinds {
		if k.name == name {
			return k, i, true
		}
	}
	return kind{}, 0, false
}

// KindOf returns the safetensors name of the project dtype d ("F32" for
// dtype.F32, "BF16" for dtype.BF16, …), or "" when d is not a valid dtype.
func KindOf(d dtype.DType) string {
	if !d.Valid() {
		return ""
	}
	for _, k := range kinds {
		if k.dt == d {
			return k.name
		}
	}
	return ""
}

// Kinds returns the names of every element type Decode accepts, in the
// reference implementation's order of increasing alignment. The caller owns
// the slice.
func Kinds() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.name
	}
	return out
}
