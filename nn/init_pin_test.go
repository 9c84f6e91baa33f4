package nn_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
	"github.com/headroom-ml/headroom/nn"
)

// refValues is the scalar path Init.Values had when initialisation became
// counter-based (one Philox4x32 call, one math.Log and one math.Sincos per
// pair): the reference the fast path must equal bit for bit.
func refValues(in nn.Init, dst []float64, lo int) {
	if in.Kind == nn.InitFill {
		for k := range dst {
			dst[k] = in.A
		}
		return
	}
	for k := 0; k < len(dst); {
		j := uint64(lo+k) / 2
		pair := refPair(in, j)
		for ; k < len(dst) && uint64(lo+k)/2 == j; k++ {
			dst[k] = pair[(lo+k)%2]
		}
	}
}

// refPair returns elements 2j and 2j+1 of in.
func refPair(in nn.Init, j uint64) [2]float64 {
	w := kernels.Philox4x32([4]uint32{uint32(j), uint32(j >> 32), uint32(in.Stream), uint32(in.Stream >> 32)},
		[2]uint32{uint32(in.Seed), uint32(in.Seed >> 32)})
	u1 := float64((uint64(w[0])<<32|uint64(w[1]))>>11) * 0x1p-53
	u2 := float64((uint64(w[2])<<32|uint64(w[3]))>>11) * 0x1p-53
	if in.Kind == nn.InitUniform {
		return [2]float64{in.A + (in.B-in.A)*u1, in.A + (in.B-in.A)*u2}
	}
	r := math.Sqrt(-2 * math.Log(1-u1))
	s, c := math.Sincos(2 * math.Pi * u2)
	return [2]float64{in.A + in.B*r*c, in.A + in.B*r*s}
}

// pinnedRanges are large Init ranges: both kinds, odd and even starts and
// lengths, a start beyond 2³² pairs (counter word 1 in use) and a stream
// beyond 2³² (counter word 3 in use).
var pinnedRanges = []struct {
	in    nn.Init
	lo, n int
}{
	{nn.Init{Kind: nn.InitUniform, A: -0.05, B: 0.05, Seed: 0, Stream: 0}, 0, 1 << 20},
	{nn.Init{Kind: nn.InitNormal, A: 0, B: 0.02, Seed: 1234, Stream: 7}, 0, 1 << 20},
	{nn.Init{Kind: nn.InitUniform, A: 1, B: 3, Seed: 1 << 40, Stream: 1<<33 + 5}, 12345677, 300001},
	{nn.Init{Kind: nn.InitNormal, A: 0.5, B: 2, Seed: ^uint64(0), Stream: 3}, 1<<33 + 3, 200003},
}

// pinnedSHA256 are the SHA-256 sums of the little-endian float64 bits of
// pinnedRanges, computed with refValues (equal to Init.Values at the start
// of the branch, commit 7cccdb4) and asserted here, so that neither the
// fast path nor the reference can drift.
var pinnedSHA256 = []string{
	"f340ae034b44f842931322fa1f7234229f3d8a576dc1e4513be8cec34c68a2df",
	"b387efdef363d88b4e11efa40e0559ae73590ed9d6687d040ce015b4c5a4f3dc",
	"14c4104fd512b48d62714bffca00a9939adbb5baa2b0ec9da004dd9430dcf71e",
	"000cd59d5b053cdb3a73d9a74f1cd30930493662b5d3445cf456589818b8a496",
}

func sum(v []float64) string {
	h := sha256.New()
	var b [8]byte
	for _, x := range v {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestInitPinned checks Init.Values over large ranges against the scalar
// reference bit for bit, and the reference against its pinned checksums.
func TestInitPinned(t *testing.T) {
	for r, p := range pinnedRanges {
		got := make([]float64, p.n)
		p.in.Values(got, p.lo)
		want := make([]float64, p.n)
		refValues(p.in, want, p.lo)
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("range %d (%+v from %d): element %d is %v, reference %v", r, p.in, p.lo, p.lo+i, got[i], want[i])
			}
		}
		if s := sum(want); s != pinnedSHA256[r] {
			t.Errorf("range %d (%+v from %d): reference checksum %s, pinned %s", r, p.in, p.lo, s, pinnedSHA256[r])
		}
	}
}

// TestInitWrite checks Write (chunked, F32 through float32 buffers) against
// the whole range's Values written in one SetFloat64s, for every float
// dtype the cpu device holds, from an odd start over several chunks.
func TestInitWrite(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	const n, lo = 3*nn.InitChunk + 5, 7
	in := nn.Init{Kind: nn.InitNormal, A: 0.1, B: 2, Seed: 5, Stream: 9}
	v := make([]float64, n)
	in.Values(v, lo)
	for _, dt := range []dtype.DType{dtype.F32, dtype.F64, dtype.BF16, dtype.F16} {
		got := autograd.Param(dev, dt, "got", n)
		want := autograd.Param(dev, dt, "want", n)
		in.Write(got, lo)
		want.SetFloat64s(v)
		g, w := got.Float64s(), want.Float64s()
		for i := range w {
			if math.Float64bits(g[i]) != math.Float64bits(w[i]) {
				t.Fatalf("%s: element %d written %v, want %v", dt, lo+i, g[i], w[i])
			}
		}
		got.Release()
		want.Release()
	}
}
