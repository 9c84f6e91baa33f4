package emu

import (
	"math"
	"math/bits"
	"math/rand"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

func TestRowSum(t *testing.T) {
	d := setup(t)
	f := module(t, d, "rowsum_f32")[0]
	const rows, n = 5, 1000
	x := make([]float32, rows*n)
	for i := range x {
		x[i] = float32(i%7 - 3) // small integers: every order of summing is exact
	}
	dx, dout := alloc[float32](t, d, len(x)), alloc[float32](t, d, rows)
	upload(t, d, dx, x)
	check(t, "cuLaunchKernel", launch(d, f, dim(3, 1, 1), dim(256, 1, 1), 0, 0, dx, dout, int32(rows), int32(n)))
	check(t, "cuCtxSynchronize", d.CtxSynchronize())
	got := download[float32](t, d, dout, rows)
	for r := 0; r < rows; r++ {
		var want float64
		for i := 0; i < n; i++ {
			want += float64(x[r*n+i])
		}
		if float64(got[r]) != want {
			t.Errorf("rowsum_f32 row %d = %v, want %v", r, got[r], want)
		}
	}
}

func TestReverseF16DynamicSharedMemory(t *testing.T) {
	d := setup(t)
	f := module(t, d, "reverse_f16")[0]
	const n, block = 1000, 128 // the last tile is partial
	rng := rand.New(rand.NewSource(1))
	x := make([]uint16, n)
	for i := range x {
		x[i] = uint16(rng.Intn(1 << 16))
	}
	out := make([]uint16, n)
	for i := range out {
		out[i] = 0xaaaa
	}
	dx, dout := alloc[uint16](t, d, n), alloc[uint16](t, d, n)
	upload(t, d, dx, x)
	upload(t, d, dout, out)
	grid := uint32((n + block - 1) / block)
	check(t, "cuLaunchKernel", launch(d, f, dim(grid, 1, 1), dim(block, 1, 1), block*4, 0, dx, dout, float32(0.75), int64(n)))
	got := download[uint16](t, d, dout, n)
	for i := 0; i < n; i++ {
		base := i / block * block
		src := base + block - 1 - i%block
		want := uint16(0xaaaa)
		if src < n {
			want = dtype.BF16FromF32(float32(0.75) * dtype.F16ToF32(x[src]))
		}
		if got[i] != want {
			t.Fatalf("reverse_f16 out[%d] = %#04x, want %#04x (from x[%d] = %#04x)", i, got[i], want, src, x[src%n])
		}
	}
}

func TestHistogramAtomics2DGrid(t *testing.T) {
	d := setup(t)
	f := module(t, d, "histogram")[0]
	const n, bins = 5000, 13
	rng := rand.New(rand.NewSource(2))
	v := make([]int32, n)
	count := make([]int32, bins)
	var maxv int32
	var sum float64
	for i := range v {
		v[i] = int32(rng.Intn(1000))
		count[v[i]%bins]++
		maxv = max(maxv, v[i])
		sum += float64(v[i])
	}
	dv, dc, dm, ds := alloc[int32](t, d, n), alloc[int32](t, d, bins), alloc[int32](t, d, 1), alloc[float64](t, d, 1)
	upload(t, d, dv, v)
	upload(t, d, dc, make([]int32, bins))
	upload(t, d, dm, []int32{-1})
	upload(t, d, ds, []float64{0})
	check(t, "cuLaunchKernel", launch(d, f, dim(3, 2, 1), dim(64, 1, 1), 0, 0, dv, int64(n), int32(bins), dc, dm, ds))
	gotC := download[int32](t, d, dc, bins)
	for b := range count {
		if gotC[b] != count[b] {
			t.Errorf("histogram count[%d] = %d, want %d", b, gotC[b], count[b])
		}
	}
	if got := download[int32](t, d, dm, 1)[0]; got != maxv {
		t.Errorf("histogram max = %d, want %d", got, maxv)
	}
	if got := download[float64](t, d, ds, 1)[0]; got != sum {
		t.Errorf("histogram sum = %v, want %v", got, sum)
	}
}

func TestWarpOperations(t *testing.T) {
	d := setup(t)
	f := module(t, d, "lanes")[0]
	const blocks, block = 2, 64
	rng := rand.New(rand.NewSource(3))
	x := make([]uint32, blocks*block)
	for i := range x {
		x[i] = uint32(rng.Intn(100))
	}
	dx, dout := alloc[uint32](t, d, len(x)), alloc[uint32](t, d, 3*len(x))
	upload(t, d, dx, x)
	check(t, "cuLaunchKernel", launch(d, f, dim(blocks, 1, 1), dim(block, 1, 1), 0, 0, dx, dout))
	got := download[uint32](t, d, dout, 3*len(x))
	for w := 0; w < len(x)/32; w++ {
		var odd, pre uint32
		for l := 0; l < 32; l++ {
			odd |= (x[32*w+l] & 1) << l
		}
		for l := 0; l < 32; l++ {
			i := 32*w + l
			pre += x[i]
			want := [3]uint32{odd, x[32*w], pre}
			if g := [3]uint32{got[3*i], got[3*i+1], got[3*i+2]}; g != want {
				t.Fatalf("lanes thread %d = (ballot, shfl lane 0, prefix) %v, want %v", i, g, want)
			}
		}
	}
}

func TestIntrinsics(t *testing.T) {
	d := setup(t)
	f := module(t, d, "wide")[0]
	const n = 100
	rng := rand.New(rand.NewSource(5))
	a, b := make([]uint32, n), make([]uint32, n)
	for i := range a {
		a[i], b[i] = rng.Uint32(), rng.Uint32()
	}
	a[0] = 3 << 22 // 1.5 after the division: rounds to even, 2
	a[1] = 5 << 22 // 2.5: rounds to even, 2
	da, db, dout := alloc[uint32](t, d, n), alloc[uint32](t, d, n), alloc[uint64](t, d, 3*n)
	upload(t, d, da, a)
	upload(t, d, db, b)
	check(t, "cuLaunchKernel", launch(d, f, dim(2, 1, 1), dim(64, 1, 1), 0, 0, da, db, dout, int32(n)))
	got := download[uint64](t, d, dout, 3*n)
	for i := 0; i < n; i++ {
		hi32, _ := bits.Mul32(a[i], b[i])
		hi64, _ := bits.Mul64(uint64(a[i])*uint64(a[i]), uint64(b[i])*uint64(b[i]))
		rn := uint64(int64(math.RoundToEven(float64(float32(a[i]) / 8388608))))
		if want := [3]uint64{uint64(hi32), hi64, rn}; [3]uint64{got[3*i], got[3*i+1], got[3*i+2]} != want {
			t.Fatalf("wide[%d] (a=%d, b=%d) = %v, want %v", i, a[i], b[i], got[3*i:3*i+3], want)
		}
	}
}

// TestMissingBarrierIsSeen shows that the emulator catches a read of shared
// memory that another thread writes without a barrier between them.
func TestMissingBarrierIsSeen(t *testing.T) {
	d := setup(t)
	f := module(t, d, "neighbour")[0]
	const blocks, block = 4, 256
	x := make([]float32, blocks*block)
	for i := range x {
		x[i] = float32(i)
	}
	dx, dout := alloc[float32](t, d, len(x)), alloc[float32](t, d, len(x))
	upload(t, d, dx, x)
	wrong := func(sync int32) int {
		check(t, "cuLaunchKernel", launch(d, f, dim(blocks, 1, 1), dim(block, 1, 1), 0, 0, dx, dout, sync))
		got := download[float32](t, d, dout, len(x))
		bad := 0
		for i := range got {
			if want := x[i/block*block+(i%block+1)%block]; got[i] != want {
				bad++
			}
		}
		return bad
	}
	if bad := wrong(1); bad != 0 {
		t.Errorf("neighbour with its barrier: %d wrong values, want 0", bad)
	}
	bad := wrong(0)
	if bad == 0 {
		t.Errorf("neighbour without its barrier gave right values: the emulator hid the race")
	}
	t.Logf("neighbour without its barrier: %d of %d values wrong", bad, len(x))
}
