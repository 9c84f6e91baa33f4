//go:build mpi

package parallel

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// mpiCheckViews reduces a contiguous slice of a larger tensor (its
// neighbours must not change) and a transposed, strided view, and gathers
// from a strided view.
func mpiCheckViews(t *testing.T, m *MPI, dev *device.Device) {
	const n = 50
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		base := autograd.New(dev, dt, device.Gradient, 3, n)
		base.Fill(-99)
		row := base.Slice(0, 1, 2)
		row.SetFloat32s(mpiValues(m.Rank(), n, dt))
		if err := m.AllReduce(row, Sum); err != nil {
			t.Errorf("AllReduce(slice %s): %v", dt, err)
		}
		got := base.Float32s()
		if err := mpiSame(m.Size(), got[n:2*n], mpiReduced(m.Size(), n, dt, Sum)); err != nil {
			t.Errorf("AllReduce(slice %s): %v", dt, err)
		}
		for i, v := range append(got[:n:n], got[2*n:]...) {
			if v != -99 {
				t.Errorf("AllReduce(slice %s) wrote outside the slice: element %d of the neighbours = %v", dt, i, v)
				break
			}
		}
		row.Release()
		base.Release()

		// every element of base is in the transposed view once
		base = mpiTensor(dev, dt, mpiValues(m.Rank(), 24, dt), 6, 4)
		view := base.Transpose(0, 1)
		if err := m.AllReduce(view, Avg); err != nil {
			t.Errorf("AllReduce(transposed %s): %v", dt, err)
		}
		if err := mpiSame(m.Size(), base.Float32s(), mpiReduced(m.Size(), 24, dt, Avg)); err != nil {
			t.Errorf("AllReduce(transposed %s): %v", dt, err)
		}
		view.Release()
		base.Release()
	}

	// rank r's src is the transpose of its values laid out (2, 3)
	base := mpiTensor(dev, dtype.F32, mpiValues(m.Rank(), 6, dtype.F32), 2, 3)
	src := base.Transpose(0, 1)
	dst := autograd.New(dev, dtype.F32, device.Parameter, m.Size()*6)
	if err := m.AllGather(dst, src); err != nil {
		t.Errorf("AllGather(transposed src): %v", err)
	}
	var want []float32
	for r := range m.Size() {
		v := mpiValues(r, 6, dtype.F32)
		want = append(want, v[0], v[3], v[1], v[4], v[2], v[5])
	}
	if err := mpiSame(2, dst.Float32s(), want); err != nil {
		t.Errorf("AllGather(transposed src): %v", err)
	}
	src.Release()
	base.Release()
	dst.Release()
}

// mpiCheckInPlace gathers into a flat buffer from this rank's part of it
// (ZeRO's parameter all-gather) and reduce-scatters a flat buffer into
// this rank's part of it (ZeRO's gradient reduce-scatter).
func mpiCheckInPlace(t *testing.T, m *MPI, dev *device.Device) {
	const n = 100
	rank, size := m.Rank(), m.Size()
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		flat := autograd.New(dev, dt, device.Parameter, size*n)
		own := flat.Slice(0, rank*n, (rank+1)*n)
		own.SetFloat32s(mpiValues(rank, n, dt))
		p := dev.Probe()
		if err := m.AllGather(flat, own); err != nil {
			t.Errorf("AllGather(in place %s): %v", dt, err)
		}
		p.Stop()
		var want []float32
		for r := range size {
			want = append(want, mpiRoundTo(dt, mpiValues(r, n, dt))...)
		}
		if err := mpiSame(2, flat.Float32s(), want); err != nil {
			t.Errorf("AllGather(in place %s): %v", dt, err)
		}
		if got := p.Rise(device.Communication); got != 0 {
			t.Errorf("AllGather(in place %s) borrowed %d bytes, want 0", dt, got)
		}
		own.Release()
		flat.Release()

		flat = mpiTensor(dev, dt, mpiValues(rank, size*n, dt), size*n)
		own = flat.Slice(0, rank*n, (rank+1)*n)
		before := flat.Float32s()
		if err := m.ReduceScatter(own, flat, Sum); err != nil {
			t.Errorf("ReduceScatter(dst in src, %s): %v", dt, err)
		}
		want = before
		copy(want[rank*n:], mpiReduced(size, size*n, dt, Sum)[rank*n:(rank+1)*n])
		if err := mpiSame(size, flat.Float32s(), want); err != nil {
			t.Errorf("ReduceScatter(dst in src, %s) on rank %d: %v", dt, rank, err)
		}
		own.Release()
		flat.Release()
	}
}

// mpiCheckBorrowed measures the bytes collectives borrow under
// device.Communication against the documented amounts, and that they are
// returned.
func mpiCheckBorrowed(t *testing.T, m *MPI, dev *device.Device) {
	const n = 1000
	rank, size := m.Rank(), m.Size()
	cases := []struct {
		name string
		want int64 // the documented bytes
		x, y *autograd.Tensor
		run  func(x, y *autograd.Tensor) error
	}{
		{"all_reduce f32", 0, mpiTensor(dev, dtype.F32, mpiValues(rank, n, dtype.F32), n), nil,
			func(x, _ *autograd.Tensor) error { return m.AllReduce(x, Sum) }},
		{"all_reduce bf16", 4 * n, mpiTensor(dev, dtype.BF16, mpiValues(rank, n, dtype.BF16), n), nil,
			func(x, _ *autograd.Tensor) error { return m.AllReduce(x, Sum) }},
		{"reduce_scatter f16", 4 * int64(size) * n, mpiTensor(dev, dtype.F16, mpiValues(rank, size*n, dtype.F16), size*n),
			autograd.New(dev, dtype.F16, device.Gradient, n),
			func(x, y *autograd.Tensor) error { return m.ReduceScatter(y, x, Avg) }},
		{"all_reduce strided f32", 4 * n, mpiTensor(dev, dtype.F32, mpiValues(rank, n, dtype.F32), 10, n/10), nil,
			func(x, _ *autograd.Tensor) error {
				v := x.Transpose(0, 1)
				defer v.Release()
				return m.AllReduce(v, Sum)
			}},
	}
	for _, c := range cases {
		p := dev.Probe()
		if err := c.run(c.x, c.y); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		p.Stop()
		if got := p.Rise(device.Communication); got != c.want {
			t.Errorf("%s of %d elements borrowed %d bytes, want %d", c.name, n, got, c.want)
		}
		if cur := dev.Stats().Tag(device.Communication).Current; cur != 0 {
			t.Errorf("%s left %d communication bytes live", c.name, cur)
		}
		t.Logf("%s of %d elements: %d communication bytes", c.name, n, p.Rise(device.Communication))
		c.x.Release()
		if c.y != nil {
			c.y.Release()
		}
	}
}

// mpiCheckFailures: ranks that make different calls, or one rank with a bad
// argument or out of memory, fail the call on every rank; the
// communicator stays usable.
func mpiCheckFailures(t *testing.T, m *MPI, dev *device.Device) {
	last := m.Size() - 1
	x := autograd.New(dev, dtype.F32, device.Gradient, 4+m.Rank())
	err := m.AllReduce(x, Sum)
	x.Release()
	if err == nil || !strings.Contains(err.Error(), "disagree on the element count") {
		t.Errorf("AllReduce of %d elements on rank %d: %v, want an element-count disagreement", 4+m.Rank(), m.Rank(), err)
	}

	if m.Rank() == last {
		x = autograd.New(dev, dtype.F32, device.Gradient, 4)
		err = m.AllReduce(x, Sum)
		x.Release()
	} else {
		err = m.Barrier()
	}
	if err == nil || !strings.Contains(err.Error(), "disagree on the collective (all_reduce on some, barrier on others)") {
		t.Errorf("Barrier against AllReduce: %v, want a collective disagreement", err)
	}
	t.Logf("rank %d: %v", m.Rank(), err)

	if m.Rank() == last {
		x = autograd.FromInt64s(dev, []int{3}, []int64{1, 2, 3})
	} else {
		x = autograd.New(dev, dtype.F32, device.Gradient, 3)
	}
	err = m.AllReduce(x, Sum)
	x.Release()
	want := fmt.Sprintf("parallel: mpi all_reduce: rank %d failed: t [3] has dtype i64, want f32, bf16, f16 or f64", last)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("AllReduce with an I64 tensor on rank %d: %v, want an error containing %q", last, err, want)
	}
	t.Logf("rank %d: %v", m.Rank(), err)

	// the last rank runs out of memory borrowing the F32 buffer of a BF16
	// all-reduce: 2 MiB tensor, 4 MiB buffer, 3 MiB capacity
	small := dev
	if m.Rank() == last {
		small = cpu.New(1, device.Options{Capacity: 3 << 20})
	}
	x = autograd.New(small, dtype.BF16, device.Gradient, 1<<20)
	err = m.AllReduce(x, Sum)
	x.Release()
	want = fmt.Sprintf("parallel: mpi all_reduce: rank %d failed: borrowing 4194304 bytes: cpu:1: out of memory", last)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("AllReduce with rank %d out of memory: %v, want an error containing %q", last, err, want)
	}
	var oom *device.OOMError
	if m.Rank() == last && !errors.As(err, &oom) {
		t.Errorf("on the rank out of memory, %v does not wrap a *device.OOMError", err)
	}
	t.Logf("rank %d: %.200s", m.Rank(), err)

	// not sticky
	mpiCheckAllReduce(t, m, dev, dtype.F32, Sum)
}

// mpiMeasureAllReduce logs the time and bandwidth of an all-reduce of 64 MiB
// of F32 and the latency of the collective header (a Barrier is only the
// header).
func mpiMeasureAllReduce(t *testing.T, m *MPI, dev *device.Device) {
	const n = 16 << 20 // 64 MiB of F32
	const iters = 3
	x := autograd.New(dev, dtype.F32, device.Gradient, n)
	defer x.Release()
	x.Fill(1)
	if err := m.AllReduce(x, Sum); err != nil { // warm-up
		t.Errorf("AllReduce: %v", err)
		return
	}
	if err := m.Barrier(); err != nil {
		t.Errorf("Barrier: %v", err)
	}
	start := time.Now()
	for range iters {
		if err := m.AllReduce(x, Sum); err != nil {
			t.Errorf("AllReduce: %v", err)
			return
		}
	}
	per := time.Since(start) / iters
	want := 1.0
	for range iters + 1 {
		want *= float64(m.Size())
	}
	if got := dtype.AsF32(x.Block().Bytes()); float64(got[0]) != want || float64(got[n-1]) != want {
		t.Errorf("after %d sums of ones: %v … %v, want %v", iters+1, got[0], got[n-1], want)
	}
	const barriers = 200
	if err := m.Barrier(); err != nil {
		t.Errorf("Barrier: %v", err)
	}
	start = time.Now()
	for range barriers {
		if err := m.Barrier(); err != nil {
			t.Errorf("Barrier: %v", err)
			return
		}
	}
	mpiHeader := time.Since(start) / barriers
	alg := float64(4*n) / per.Seconds() / 1e9
	bus := alg * 2 * float64(m.Size()-1) / float64(m.Size())
	t.Logf("rank %d of %d: all_reduce 64 MiB f32: %v per call, algorithm bandwidth %.2f GB/s, bus bandwidth %.2f GB/s; collective header %v",
		m.Rank(), m.Size(), per.Round(time.Microsecond), alg, bus, mpiHeader.Round(100*time.Nanosecond))
}

// mpiCheckAbort: the last rank aborts while the others wait in an all-reduce;
// every rank fails that all-reduce with an error naming the aborting rank,
// and every later collective fails the same way at once.
func mpiCheckAbort(t *testing.T, m *MPI, dev *device.Device) {
	last := m.Size() - 1
	cause := errors.New("simulated out of memory")
	x := autograd.New(dev, dtype.F32, device.Gradient, 16)
	defer x.Release()
	if m.Rank() == last {
		time.Sleep(100 * time.Millisecond)
		m.Abort(cause)
	}
	start := time.Now()
	err := m.AllReduce(x, Sum)
	want := fmt.Sprintf("rank %d aborted: simulated out of memory", last)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("AllReduce after rank %d aborted: %v, want an error containing %q", last, err, want)
		return
	}
	if m.Rank() == last && !errors.Is(err, cause) {
		t.Errorf("on the aborting rank, %v does not wrap the cause", err)
	}
	t.Logf("rank %d: %v after %v", m.Rank(), err, time.Since(start).Round(time.Millisecond))
	for name, f := range map[string]func() error{
		"Barrier":   m.Barrier,
		"Broadcast": func() error { return m.Broadcast(x, 0) },
		"AllReduce": func() error { return m.AllReduce(x, Avg) },
	} {
		if again := f(); again == nil || again.Error() != err.Error() {
			t.Errorf("%s after the abort: %v, want %v", name, again, err)
		}
	}
}

// mpiCheckF64 runs every collective on F64 (reduced in F64: exact
// against float64 sums with two ranks, whose sum rounds once).
func mpiCheckF64(t *testing.T, m *MPI, dev *device.Device) {
	const n = 64
	rank, size := m.Rank(), m.Size()
	vals := func(r, n int) []float64 {
		rng := rand.New(rand.NewPCG(11, uint64(r)))
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		return v
	}
	sum := make([]float64, size*n)
	for r := range size {
		for i, x := range vals(r, size*n) {
			sum[i] += x
		}
	}
	check := func(what string, got, want []float64) {
		for i := range want {
			if d := got[i] - want[i]; d != 0 && (size == 2 || math.Abs(d) > 1e-15*math.Abs(want[i])) {
				t.Errorf("%s (f64) on rank %d: element %d = %v, want %v", what, rank, i, got[i], want[i])
				return
			}
		}
	}
	for _, op := range []Op{Sum, Avg} {
		x := autograd.FromFloat64s(dev, []int{size * n}, vals(rank, size*n))
		if err := m.AllReduce(x, op); err != nil {
			t.Errorf("AllReduce(f64): %v", err)
		}
		want := append([]float64(nil), sum...)
		if op == Avg {
			for i := range want {
				want[i] /= float64(size)
			}
		}
		check("AllReduce "+mpiOpName(op), x.Float64s(), want)
		x.Release()
	}

	src := autograd.FromFloat64s(dev, []int{size * n}, vals(rank, size*n))
	dst := autograd.New(dev, dtype.F64, device.Gradient, n)
	if err := m.ReduceScatter(dst, src, Sum); err != nil {
		t.Errorf("ReduceScatter(f64): %v", err)
	}
	check("ReduceScatter", dst.Float64s(), sum[rank*n:(rank+1)*n])
	own := src.Slice(0, rank*n, (rank+1)*n)
	if err := m.ReduceScatter(own, src, Avg); err != nil { // dst inside src
		t.Errorf("ReduceScatter(f64, dst in src): %v", err)
	}
	want := vals(rank, size*n)
	for i := rank * n; i < (rank+1)*n; i++ {
		want[i] = sum[i] / float64(size)
	}
	check("ReduceScatter (dst in src)", src.Float64s(), want)
	own.Release()

	if err := m.AllGather(src, dst); err != nil {
		t.Errorf("AllGather(f64): %v", err)
	}
	check("AllGather", src.Float64s(), sum)
	if err := m.Broadcast(dst, 0); err != nil {
		t.Errorf("Broadcast(f64): %v", err)
	}
	check("Broadcast", dst.Float64s(), sum[:n])
	src.Release()
	dst.Release()
}
