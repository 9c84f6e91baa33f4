package cpu

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// TestGemmHalfBands: a GEMM whose 16-bit C exceeds gemmChunk runs band by
// band and gives, byte for byte, the whole-C path (C widened whole, one
// GemmHalfBias, narrowed back), for both 16-bit formats, beta 0 and 0.5,
// gaps between C's rows, A transposed or not, with and without a bias —
// and allocates no float32 copy of C on the Go heap: at most the one
// reused band buffer (gemmChunk float32, when the pool must make it again)
// and 1 MiB more, against 12 MB for C widened whole.
func TestGemmHalfBands(t *testing.T) {
	gemmHalfBandsCase(t, 3000, 1000, 20, 1003)
}

// TestGemmHalfSmallBands: a 16-bit C that fits the band buffer is one
// band, byte for byte the whole-C path: one row, odd sizes, a gap between
// rows, depths the AMX kernel takes (a bfloat16 C narrowed tile by tile
// by the GEMM), and no Go-heap copy of C.
func TestGemmHalfSmallBands(t *testing.T) {
	for _, s := range [][4]int{{1, 1, 1, 1}, {1, 37, 5, 37}, {7, 33, 5, 35}, {12, 32, 64, 32}, {29, 17, 3, 17}, {70, 65, 96, 67}, {64, 32, 352, 32}} {
		gemmHalfBandsCase(t, s[0], s[1], s[2], s[3])
	}
}

// gemmHalfBandsCase is TestGemmHalfBands for an m×n C (row stride ldc)
// from a depth of k.
func gemmHalfBandsCase(t *testing.T, m, n, k, ldc int) {
	rng := rand.New(rand.NewPCG(5, 6))
	dev := New(0, device.Options{})
	defer dev.Close()
	half := func(dt dtype.DType, size, off int) device.Operand { return halfOperand(t, dev, rng, dt, size, off) }
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
		for _, beta := range []float64{0, 0.5} {
			for _, transA := range []bool{false, true} {
				for _, withBias := range []bool{false, true} {
					g := device.Gemm{TransA: transA, M: m, N: n, K: k, Alpha: 1, Beta: beta, LdB: n, LdC: ldc}
					g.LdA = k
					if transA {
						g.LdA = m
					}
					g.A = half(dt, m*k+3, 3)
					g.B = half(dt, k*n, 0)
					g.C = half(dt, (m-1)*ldc+n+2, 2)
					if withBias {
						g.Bias = half(dt, n, 0)
					}
					if !gemmHalfRows(g) {
						t.Fatalf("%s: gemmHalfRows false for a %d×%d C", dt, m, n)
					}
					want := wholeC(g)
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					kern{}.Gemm(g)
					runtime.ReadMemStats(&after)
					got := g.C.Block.Bytes()
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%s beta %g transA %v bias %v: C byte %d = %#x by bands, %#x widened whole", dt, beta, transA, withBias, i, got[i], want[i])
						}
					}
					if heap := after.TotalAlloc - before.TotalAlloc; heap > 4*gemmChunk+1<<20 {
						t.Errorf("%s beta %g: %d bytes of Go heap for a C of %d elements, want ≤ %d", dt, beta, heap, (m-1)*ldc+n, 4*gemmChunk+1<<20)
					}
				}
			}
		}
	}
}

// halfOperand returns a contiguous 16-bit operand of size random values
// in [-1, 1) from element off on, on a block of its own.
func halfOperand(t *testing.T, dev *device.Device, rng *rand.Rand, dt dtype.DType, size, off int) device.Operand {
	blk, err := dev.Alloc(int64(size*dt.Size()), device.Label{Tag: device.Activation})
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, size)
	for i := range v {
		v[i] = float32(2*rng.Float64() - 1)
	}
	fromF32(dt, blk.Bytes(), v)
	return device.Operand{Block: blk, DType: dt, Shape: []int{size - off}, Off: off}
}

// wholeC is the GEMM as the cpu computed it before bands: C's footprint
// widened whole, one GemmHalfBias, narrowed back; it returns C's bytes.
func wholeC(g device.Gemm) []byte {
	c := make([]float32, len(g.C.Block.Bytes())/g.C.DType.Size())
	toF32(c, g.C.DType, g.C.Block.Bytes())
	var bias []float32
	if g.Bias.Block != nil {
		bias = make([]float32, g.N)
		toF32(bias, g.Bias.DType, g.Bias.Block.Bytes()[g.Bias.Off*2:(g.Bias.Off+g.N)*2])
	}
	args := kernels.GemmArgs{TransA: g.TransA, M: g.M, N: g.N, K: g.K, Alpha: g.Alpha, Beta: g.Beta,
		OffA: g.A.Off, OffB: g.B.Off, OffC: g.C.Off, LdA: g.LdA, LdB: g.LdB, LdC: g.LdC}
	kernels.GemmHalfBias(args, dtype.AsU16(g.A.Block.Bytes()), dtype.AsU16(g.B.Block.Bytes()),
		g.A.DType == dtype.BF16, g.B.DType == dtype.BF16, bias, c)
	out := make([]byte, len(c)*g.C.DType.Size())
	fromF32(g.C.DType, out, c)
	return out
}
