package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// operand allocates a contiguous operand of n elements on d and writes vals.
func newOp(t testing.TB, d *device.Device, dt dtype.DType, vals []float64) device.Operand {
	t.Helper()
	b, err := d.Alloc(int64(len(vals)*dt.Size()), device.Label{Tag: device.Activation, Op: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Release)
	o := device.Operand{Block: b, DType: dt, Shape: []int{len(vals)}}
	buf := make([]byte, len(vals)*dt.Size())
	dtype.FromF64(dt, buf, vals)
	d.Kernels().Write(o, buf)
	return o
}

func readF64(o device.Operand, d *device.Device) []float64 {
	buf := make([]byte, o.Len()*o.DType.Size())
	d.Kernels().Read(buf, o)
	out := make([]float64, o.Len())
	dtype.ToF64(out, o.DType, buf)
	return out
}

// TestGemm checks cuBLAS's GEMM through the row-major mapping against the
// cpu device, for every dtype and transpose, batched with strides, padded
// leading dimensions, a shared (stride 0) B, alpha and beta; and with a
// bias (set into C ahead of cuBLAS) against the cpu's fused one, for beta
// 0, 1 and 0.5 across the transposes.
func TestGemm(t *testing.T) {
	gd, _ := open(t, device.Options{})
	defer gd.Close()
	cd := cpu.New(0, device.Options{})
	defer cd.Close()
	tol := map[dtype.DType]float64{dtype.F64: 1e-12, dtype.F32: 1e-5, dtype.F16: 4e-3, dtype.BF16: 2e-2}
	for _, dt := range []dtype.DType{dtype.F64, dtype.F32, dtype.F16, dtype.BF16} {
		for i, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			t.Run(fmt.Sprintf("%s/ta=%v/tb=%v", dt, tr[0], tr[1]), func(t *testing.T) {
				gemmCase(t, gd, cd, dt, tr[0], tr[1], 0.5, false, tol[dt])
				// A 16-bit C with beta 0.5 is rounded to 16 bits as
				// beta·C + bias before the GEMM on the gpu, not on the cpu.
				gemmCase(t, gd, cd, dt, tr[0], tr[1], []float64{0, 1, 0.5, 0.5}[i], true, 2*tol[dt])
			})
		}
	}
}

func gemmCase(t *testing.T, gd, cd *device.Device, dt dtype.DType, ta, tb bool, beta float64, bias bool, tol float64) {
	m, n, k, batch := 5, 7, 6, 3
	rows := func(tr bool, r, c int) (int, int) {
		if tr {
			return c, r
		}
		return r, c
	}
	ar, ac := rows(ta, m, k)
	br, bc := rows(tb, k, n)
	lda, ldb, ldc := ac+2, bc+1, n+3
	sa, sb, sc := ar*lda, 0, m*ldc // B shared by the batch
	rnd := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Round(rand.NormFloat64()*16) / 16
		}
		return v
	}
	av, bv, cv := rnd(sa*batch), rnd(br*ldb), rnd(sc*batch)
	biasv := rnd(n + 2)
	p := device.Gemm{TransA: ta, TransB: tb, M: m, N: n, K: k, Alpha: 1.5, Beta: beta,
		LdA: lda, LdB: ldb, LdC: ldc, Batch: batch, StrideA: sa, StrideB: sb, StrideC: sc}
	run := func(d *device.Device) []float64 {
		q := p
		q.A, q.B, q.C = newOp(t, d, dt, av), newOp(t, d, dt, bv), newOp(t, d, dt, cv)
		if bias {
			q.Bias = newOp(t, d, dt, biasv)
			q.Bias.Off, q.Bias.Shape = 2, []int{n}
		}
		d.Kernels().Gemm(q)
		return readF64(q.C, d)
	}
	got, want := run(gd), run(cd)
	for i := range want {
		if d := math.Abs(got[i] - want[i]); d > tol*(1+math.Abs(want[i])) || math.IsNaN(got[i]) {
			t.Fatalf("C[%d] = %v, cpu %v (tolerance %g)", i, got[i], want[i], tol)
		}
	}
}
