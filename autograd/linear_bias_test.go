package autograd_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
)

// linearRun runs Linear forward and backward on dev in dt with the bias
// fused into the GEMM or copied into the output first, and returns the
// output and the three gradients as bytes, and the device's Stats after
// the forward pass and after the backward pass.
func linearRun(t *testing.T, dev *device.Device, dt dtype.DType, copyBias bool, xs []int, nout int) ([][]byte, []device.Stats) {
	t.Helper()
	defer autograd.SetLinearBiasCopy(autograd.SetLinearBiasCopy(copyBias))
	r := rand.New(rand.NewPCG(11, 12))
	in := xs[len(xs)-1]
	s := autograd.NewScope()
	defer s.Release()
	leaf := func(shape []int) *autograd.Tensor {
		return s.FromFloat64s(dev, shape, randVals(r, numelOf(shape))).Cast(dt).SetRequiresGrad(true)
	}
	x, w, b := leaf(xs), leaf([]int{nout, in}), leaf([]int{nout})
	var st []device.Stats
	y := autograd.Linear(x, w, b)
	st = append(st, dev.Stats())
	if err := y.Sum(false).Backward(); err != nil {
		t.Fatal(err)
	}
	st = append(st, dev.Stats())
	if dev.Kernels() == nil {
		return nil, st
	}
	var out [][]byte
	for _, v := range []*autograd.Tensor{y, x.Grad(), w.Grad(), b.Grad()} {
		out = append(out, dtype.Bytes(v.Cast(dtype.F32).Float32s()))
	}
	return out, st
}

// TestLinearBiasFused checks that Linear's fused bias gives, byte for
// byte, the output and gradients of copying the bias into the output
// first, in every float dtype, through the direct loops and the packed
// GEMM, and that it allocates exactly as before and as the meta device
// says (no temporary was removed: the copy went into the output itself).
func TestLinearBiasFused(t *testing.T) {
	for _, sh := range []struct {
		xs   []int
		nout int
	}{{[]int{3, 4}, 5}, {[]int{4, 30, 70}, 90}, {[]int{64, 300}, 48}} {
		for _, dt := range []dtype.DType{dtype.F32, dtype.F64, dtype.BF16, dtype.F16} {
			t.Run(fmt.Sprintf("%v→%d/%s", sh.xs, sh.nout, dt), func(t *testing.T) {
				fused, fst := linearRun(t, cpu.New(0, device.Options{}), dt, false, sh.xs, sh.nout)
				old, ost := linearRun(t, cpu.New(0, device.Options{}), dt, true, sh.xs, sh.nout)
				for i, name := range []string{"y", "dx", "dw", "db"} {
					if !bytes.Equal(fused[i], old[i]) {
						got, want := dtype.AsF32(fused[i]), dtype.AsF32(old[i])
						for j := range got {
							if got[j] != want[j] {
								t.Fatalf("%s[%d] = %v with the fused bias, %v copying it first", name, j, got[j], want[j])
							}
						}
					}
				}
				_, mst := linearRun(t, meta.New(0, device.Options{}), dt, false, sh.xs, sh.nout)
				sameStats(t, fst, ost)
				sameStats(t, fst, mst)
			})
		}
	}
}
