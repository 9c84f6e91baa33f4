package conformance

import (
	"fmt"
	"math"

	"github.com/headroom-ml/headroom/dtype"
)

// Tolerance bounds the difference between a value computed on the device
// under test and the cpu device's F64 value of the same computation (on
// inputs already rounded to the dtype under test): an element passes when
//
//	|got − want| ≤ Atol·scale + Rtol·|want|
//
// where scale is max(1, the largest |want| of the tensor), so that an
// element that cancels to near zero is judged against the size of its
// neighbours, not against itself.
type Tolerance struct{ Atol, Rtol float64 }

// Tolerances are the suite's bounds per dtype, defined once. F64 allows a
// different summation order; F32 a few units of its 2⁻²⁴ rounding through
// a forward and a backward of small reductions; F16 (2⁻¹¹) and BF16 (2⁻⁸)
// store every intermediate in 16 bits and compute in F32, so a result
// carries several roundings of its unit.
var Tolerances = map[dtype.DType]Tolerance{
	dtype.F64:  {Atol: 1e-10, Rtol: 1e-9},
	dtype.F32:  {Atol: 2e-5, Rtol: 1e-4},
	dtype.F16:  {Atol: 6e-3, Rtol: 1e-2},
	dtype.BF16: {Atol: 5e-2, Rtol: 5e-2},
}

// mismatch returns a description of the first element of got that is
// further from want than tol allows, or "".
func mismatch(got, want []float64, tol Tolerance) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d values, want %d", len(got), len(want))
	}
	scale := 1.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for i := range want {
		g, w := got[i], want[i]
		d := math.Abs(g - w)
		if d <= tol.Atol*scale+tol.Rtol*math.Abs(w) {
			continue
		}
		if math.IsNaN(w) && math.IsNaN(g) {
			continue
		}
		return fmt.Sprintf("element %d = %.9g, want %.9g (|diff| %.3g > %.3g·%.3g + %.3g·|want|)",
			i, g, w, d, tol.Atol, scale, tol.Rtol)
	}
	return ""
}

// round returns v rounded to dt (a copy); F64 and integer dtypes are
// returned as they are.
func round(v []float64, dt dtype.DType) []float64 {
	out := append([]float64(nil), v...)
	if dt == dtype.F64 || !dt.IsFloat() {
		return out
	}
	b := make([]byte, len(v)*dt.Size())
	dtype.FromF64(dt, b, out)
	dtype.ToF64(out, dt, b)
	return out
}
