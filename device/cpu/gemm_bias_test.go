package cpu_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestGemmBiasMatchesCopy checks the fused bias of the cpu Gemm, byte for
// byte, against what autograd.Linear did before it: copy the bias into
// every row of C, then run the GEMM with beta 1. Every float dtype (a
// 16-bit C is rounded once either way), K over several kc panels, and a
// mixed-output product (16-bit A and B, F32 C); C's rows padded, whose
// gaps keep their values.
func TestGemmBiasMatchesCopy(t *testing.T) {
	d := cpu.New(0, device.Options{})
	defer d.Close()
	k := d.Kernels()
	r := rand.New(rand.NewPCG(7, 8))
	op := func(dt dtype.DType, n int, vals []float64) device.Operand {
		b, err := d.Alloc(int64(n*dt.Size()), device.Label{Tag: device.Activation, Op: "test"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Release)
		o := device.Operand{Block: b, DType: dt, Shape: []int{n}}
		buf := make([]byte, n*dt.Size())
		dtype.FromF64(dt, buf, vals)
		k.Write(o, buf)
		return o
	}
	// m, n, k, batch, padding of C's rows (its gaps must keep their values)
	for _, s := range [][5]int{{64, 96, 300, 1, 0}, {5, 7, 3, 1, 2}, {37, 130, 70, 3, 0}, {40, 50, 60, 2, 3}} {
		m, n, kk, batch, pad := s[0], s[1], s[2], s[3], s[4]
		for _, dts := range [][2]dtype.DType{{dtype.F32, dtype.F32}, {dtype.F64, dtype.F64},
			{dtype.BF16, dtype.BF16}, {dtype.F16, dtype.F16}, {dtype.BF16, dtype.F32}} {
			t.Run(fmt.Sprintf("%dx%dx%d/%s→%s", m, n, kk, dts[0], dts[1]), func(t *testing.T) {
				ldc, cn := n+pad, batch*m*(n+pad)
				g := device.Gemm{TransB: true, M: m, N: n, K: kk, Alpha: 1, LdA: kk, LdB: kk, LdC: ldc,
					Batch: batch, StrideA: m * kk, StrideC: m * ldc,
					A: op(dts[0], batch*m*kk, randFloats(r, batch*m*kk)), B: op(dts[0], n*kk, randFloats(r, n*kk))}
				bias := op(dts[1], n, randFloats(r, n))
				c0 := randFloats(r, cn)
				fused, old := g, g
				fused.C, fused.Bias = op(dts[1], cn, c0), bias
				old.C, old.Beta = op(dts[1], cn, c0), 1
				k.Gemm(fused)
				bc := bias
				bc.Shape, bc.Strides = []int{batch * m, n}, []int{0, 1}
				oc := old.C
				oc.Shape, oc.Strides = []int{batch * m, n}, []int{ldc, 1}
				k.Copy(oc, bc)
				k.Gemm(old)
				if got, want := fused.C.Block.Bytes(), old.C.Block.Bytes(); !bytes.Equal(got, want) {
					gv, wv := make([]float64, cn), make([]float64, cn)
					dtype.ToF64(gv, dts[1], got)
					dtype.ToF64(wv, dts[1], want)
					for i := range gv {
						if gv[i] != wv[i] {
							t.Fatalf("C[%d] = %v with the fused bias, %v copying it first", i, gv[i], wv[i])
						}
					}
				}
			})
		}
	}
}
