package autograd

import (
	"math"
	"runtime"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// TestTransferChunked copies tensors of every float dtype, of lengths
// around the piece size, from contiguous views at an offset, between two
// cpu devices in pieces of 12 bytes (3 float32 elements, 6 16-bit ones,
// 1 float64 and a half): the copy must equal the source bit for bit.
func TestTransferChunked(t *testing.T) {
	defer func(c int) { transferChunk = c }(transferChunk)
	transferChunk = 12
	a, b := cpu.New(0, device.Options{}), cpu.New(1, device.Options{})
	defer a.Close()
	defer b.Close()
	for _, dt := range []dtype.DType{dtype.F32, dtype.F64, dtype.F16, dtype.BF16} {
		for _, n := range []int{1, 2, 3, 5, 6, 7, 13, 100} {
			vals := make([]float32, n+2)
			for i := range vals {
				vals[i] = float32(math.Sin(float64(i)+0.5)) * 3
			}
			full := FromFloat32s(a, []int{n + 2}, vals).Cast(dt)
			src := full.Slice(0, 1, n+1) // contiguous, at offset 1
			dst := src.To(b)
			got, want := dst.hostBytes("test", dt), src.hostBytes("test", dt)
			if string(got) != string(want) {
				t.Fatalf("%s length %d: the chunked copy differs from its source", dt, n)
			}
			for _, x := range []*Tensor{dst, src, full} {
				x.Release()
			}
		}
	}
}

// TestTransferHostScratchBounded moves a 16 MiB tensor between two cpu
// devices: the Go heap allocated by the copy stays within one piece
// (TransferChunk) and a little bookkeeping, not the tensor's size.
func TestTransferHostScratchBounded(t *testing.T) {
	a, b := cpu.New(0, device.Options{}), cpu.New(1, device.Options{})
	defer a.Close()
	defer b.Close()
	const n = 4 << 20 // float32 elements: 16 MiB
	src := Full(a, dtype.F32, 1.5, n)
	defer src.Release()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	dst := src.To(b)
	runtime.ReadMemStats(&after)
	defer dst.Release()
	if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(TransferChunk+1<<20); got > limit {
		t.Fatalf("To of a %d-byte tensor allocated %d bytes of Go heap, want at most %d (one %d-byte piece)", 4*n, got, limit, TransferChunk)
	}
	if v := dst.Slice(0, n-1, n).Float64s()[0]; v != 1.5 {
		t.Fatalf("last element after the copy: %v, want 1.5", v)
	}
}
