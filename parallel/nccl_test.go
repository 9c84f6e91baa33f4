package parallel_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/cuda"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/dtype"
	icuda "github.com/headroom-ml/headroom/internal/cuda"
	"github.com/headroom-ml/headroom/parallel"
)

// openGPUs opens the emulated GPUs 0..n-1 (closed at cleanup).
func openGPUs(t *testing.T, n int) []*device.Device {
	devs := make([]*device.Device, n)
	for r := range devs {
		devs[r] = cudatest.Open(t, r, device.Options{})
	}
	return devs
}

// ncclDevices is openGPUs of 2, failing t at once where the driver has
// fewer (cudatest.NeedGPUs): for the tests that mean nothing on one rank.
func ncclDevices(t *testing.T) []*device.Device {
	t.Helper()
	cudatest.NeedGPUs(t, 2)
	return openGPUs(t, 2)
}

// ncclGroup makes the NCCL communicators of devs, closed at cleanup
// (before the devices, which were opened first).
func ncclGroup(t *testing.T, devs []*device.Device) []parallel.Communicator {
	t.Helper()
	cs, err := parallel.NewNCCLGroup(devs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			if err := c.(*parallel.NCCL).Close(); err != nil {
				t.Errorf("Close of rank %d: %v", c.Rank(), err)
			}
		}
	})
	return cs
}

// collectiveOutputs runs every collective once on comms, rank r's tensors
// on devs[r] and its inputs data[r], and returns each rank's outputs, one
// after the other: all_reduce, reduce_scatter, all_gather, all_gather in
// place, broadcast from the last rank.
func collectiveOutputs(comms []parallel.Communicator, devs []*device.Device, dt dtype.DType, op parallel.Op, data [][]float64, per int) ([][]float64, error) {
	n := len(comms)
	out := make([][]float64, n)
	err := parallel.Run(comms, func(c parallel.Communicator) error {
		r, dev := c.Rank(), devs[c.Rank()]
		keep := func(t *autograd.Tensor) { out[r] = append(out[r], t.Float64s()...); t.Release() }
		x := tensorOf(dev, dt, data[r][:n*per+3])
		if err := c.AllReduce(x, op); err != nil {
			return err
		}
		keep(x)
		src, dst := tensorOf(dev, dt, data[r][:n*per]), autograd.New(dev, dt, device.Communication, per)
		if err := c.ReduceScatter(dst, src, op); err != nil {
			return err
		}
		src.Release()
		keep(dst)
		mine, all := tensorOf(dev, dt, data[r][:per]), autograd.New(dev, dt, device.Communication, n*per)
		if err := c.AllGather(all, mine); err != nil {
			return err
		}
		mine.Release()
		all.Fill(0)
		slot := all.Slice(0, r*per, (r+1)*per)
		slot.SetFloat64s(data[r][per : 2*per])
		if err := c.AllGather(all, slot); err != nil {
			return err
		}
		slot.Release()
		keep(all)
		b := tensorOf(dev, dt, data[r][:7])
		if err := c.Broadcast(b, n-1); err != nil {
			return err
		}
		keep(b)
		return c.Barrier()
	})
	return out, err
}

// TestNCCLCollectivesMatchTheGroup runs every collective, in every dtype
// and both reductions, through NCCL on the two emulated GPUs and through
// the in-process group on cpu ranks, with the same inputs: every rank's
// every output is the same, bit for bit (the fake NCCL reduces in rank
// order in F32, as the group does). On one rank too (only, on one GPU).
func TestNCCLCollectivesMatchTheGroup(t *testing.T) {
	for _, n := range []int{2, 1}[2-cudatest.GPUs(t, 2):] {
		devs := openGPUs(t, n)
		comms := ncclGroup(t, devs)
		cpus := make([]*device.Device, n)
		for r := range cpus {
			cpus[r] = cpu.New(r, device.Options{})
		}
		const per = 100
		for _, dt := range dtypes {
			for _, op := range []parallel.Op{parallel.Sum, parallel.Avg} {
				data := make([][]float64, n)
				for r := range data {
					data[r] = rankData(dt, r, (n+1)*per+3)
				}
				got, err := collectiveOutputs(comms, devs, dt, op, data, per)
				if err != nil {
					t.Fatalf("%d ranks, %s, op %d: nccl: %v", n, dt, op, err)
				}
				want, err := collectiveOutputs(parallel.NewGroup(n), cpus, dt, op, data, per)
				if err != nil {
					t.Fatal(err)
				}
				for r := range n {
					if i := firstDiff(got[r], want[r]); i >= 0 {
						t.Errorf("%d ranks, %s, op %d, rank %d: output %d = %v through NCCL, %v through the group (of %d outputs)", n, dt, op, r, i, got[r][i], want[r][i], len(want[r]))
					}
				}
			}
		}
		for r, d := range devs {
			if live := d.Leaks(); len(live) > 0 {
				t.Errorf("%d ranks, rank %d leaks %v", n, r, live)
			}
		}
	}
}

// firstDiff returns the first index where a and b differ in their bits
// (or in length), -1 when they are the same.
func firstDiff(a, b []float64) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestNCCLWaitsForCompute queues a kernel that writes a tensor and at once
// all-reduces it: the collective runs on the communication stream, and
// the emulator runs a stream's work only when something waits for it, so
// without the event that orders the communication stream after the
// compute stream it would reduce the tensor before the kernel wrote it.
func TestNCCLWaitsForCompute(t *testing.T) {
	devs := ncclDevices(t)
	comms := ncclGroup(t, devs)
	err := parallel.Run(comms, func(c parallel.Communicator) error {
		dev := devs[c.Rank()]
		x := tensorOf(dev, dtype.F32, []float64{1, 2, 3, float64(c.Rank())})
		y := x.Scale(3) // queued on the compute stream, not yet run
		defer x.Release()
		defer y.Release()
		if err := c.AllReduce(y, parallel.Sum); err != nil {
			return err
		}
		if got := fmt.Sprint(y.Float64s()); got != "[6 12 18 3]" {
			return fmt.Errorf("rank %d: all_reduce of 3·x = %s, want [6 12 18 3]", c.Rank(), got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNCCLComputeGoesOnWhileACollectiveWaits starts an all-reduce on rank
// 0 alone — it cannot finish before rank 1 joins — and meanwhile runs and
// reads a kernel on rank 0's device: the caller of the collective waits,
// the device's worker and compute stream do not. Rank 1 joins only after
// rank 0's kernel result was read.
func TestNCCLComputeGoesOnWhileACollectiveWaits(t *testing.T) {
	devs := ncclDevices(t)
	comms := ncclGroup(t, devs)
	xs := []*autograd.Tensor{tensorOf(devs[0], dtype.F32, []float64{1, 2}), tensorOf(devs[1], dtype.F32, []float64{10, 20})}
	defer xs[0].Release()
	defer xs[1].Release()
	done := make(chan error, 1)
	go func() { done <- comms[0].AllReduce(xs[0], parallel.Sum) }()
	z := tensorOf(devs[0], dtype.F32, []float64{4, 5})
	w := z.Scale(2)
	computed := make(chan string, 1)
	go func() { computed <- fmt.Sprint(w.Float64s()) }()
	select {
	case got := <-computed:
		if got != "[8 10]" {
			t.Errorf("rank 0's kernel while its all_reduce waits: %s, want [8 10]", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("rank 0's kernel did not finish while its all_reduce waited for rank 1: the collective blocks the device")
	}
	select {
	case err := <-done:
		t.Fatalf("rank 0's all_reduce returned before rank 1 joined: %v", err)
	default:
	}
	z.Release()
	w.Release()
	if err := comms[1].AllReduce(xs[1], parallel.Sum); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for r, x := range xs {
		if got := fmt.Sprint(x.Float64s()); got != "[11 22]" {
			t.Errorf("rank %d: %s, want [11 22]", r, got)
		}
	}
}

// TestNCCLMemoryIsCounted checks that NCCL's own device memory — what the
// driver reports used after initialisation less before: the fake NCCL's
// 4 MiB of buffers; on a real GPU whatever NCCL took, more than none — is
// on each device's accounting, tagged communication, in Reserved and in
// the summary, and goes at Close. On two ranks, one on a one-GPU machine.
func TestNCCLMemoryIsCounted(t *testing.T) {
	devs := openGPUs(t, cudatest.GPUs(t, 2))
	before := devs[0].Stats()
	cs, err := parallel.NewNCCLGroup(devs)
	if err != nil {
		t.Fatal(err)
	}
	for r, c := range cs {
		nc := c.(*parallel.NCCL)
		st := devs[r].Stats()
		fake := int64(4 << 20) // kBuffer in internal/cuda/emu/csrc/nccl.cpp
		if cudatest.Real() {
			fake = nc.DriverBytes() // what the real NCCL took, measured
			t.Logf("rank %d: the real NCCL took %d bytes of device memory", r, fake)
		}
		if got := nc.DriverBytes(); got != fake || got <= 0 {
			t.Errorf("rank %d: NCCL took %d driver bytes, want %d (the fake's buffers)", r, got, fake)
		}
		// and 4 bytes: the F32 that Barrier reduces
		if got, want := st.ByTag[device.Communication].Current, fake+4; got != want {
			t.Errorf("rank %d: communication bytes %d, want %d", r, got, want)
		}
		if r == 0 {
			if got, want := st.Reserved.Current-before.Reserved.Current, fake+device.RoundSize(4); got < fake || got > want+2<<20 {
				t.Errorf("rank 0: reserved rose by %d, want NCCL's %d plus at most one segment for the barrier's 4 bytes", got, fake)
			}
			if s := devs[0].Summary(); !strings.Contains(s, "communication") {
				t.Errorf("summary without communication:\n%s", s)
			}
			t.Logf("cuda:0 with NCCL:\n%s", devs[0].Summary())
		}
	}
	for r, c := range cs {
		if err := c.(*parallel.NCCL).Close(); err != nil {
			t.Fatal(err)
		}
		if got := devs[r].Stats().ByTag[device.Communication].Current; got != 0 {
			t.Errorf("rank %d after Close: communication bytes %d, want 0", r, got)
		}
	}
}

// TestNCCLBadTensorsAreErrorsBeforeAnyWork passes tensors NCCL cannot
// take, on rank 0 only: each is an error naming the op at once (no rank
// waits for another), and the communicators go on working after.
func TestNCCLBadTensorsAreErrorsBeforeAnyWork(t *testing.T) {
	devs := ncclDevices(t)
	comms := ncclGroup(t, devs)
	other := tensorOf(devs[1], dtype.F32, []float64{1, 2})
	ints := autograd.New(devs[0], dtype.I64, device.Communication, 2)
	m := tensorOf(devs[0], dtype.F32, []float64{1, 2, 3, 4, 5, 6})
	mat := m.Reshape(2, 3)
	tr := mat.Transpose(0, 1)
	small := autograd.New(devs[0], dtype.F32, device.Communication, 2)
	mid := m.Slice(0, 1, 4)
	defer func() {
		for _, x := range []*autograd.Tensor{other, ints, m, mat, tr, small, mid} {
			x.Release()
		}
	}()
	c := comms[0]
	for _, k := range []struct {
		name string
		call func() error
		want string
	}{
		{"other device", func() error { return c.AllReduce(other, parallel.Sum) }, "nccl all_reduce on rank 0: t is on cuda:1, want this rank's cuda:0"},
		{"dtype", func() error { return c.Broadcast(ints, 0) }, "nccl broadcast on rank 0: t is i64, want F32"},
		{"strides", func() error { return c.AllReduce(tr, parallel.Avg) }, "nccl all_reduce on rank 0: t [3 2] (strides [1 3]) is not contiguous"},
		{"sizes", func() error { return c.ReduceScatter(small, m, parallel.Sum) }, "nccl reduce_scatter: src [6] f32 for dst [2] f32 on 2 ranks: want 2·2 elements"},
		{"overlap", func() error { return c.AllGather(m, mid) }, "src overlaps dst but is not its slot 0"},
		{"root", func() error { return c.Broadcast(m, 2) }, "root 2 out of range for 2 ranks"},
	} {
		err := k.call()
		if err == nil || !strings.Contains(err.Error(), k.want) {
			t.Errorf("%s: err = %v, want it to contain %q", k.name, err, k.want)
		}
	}
	data := [][]float64{rankData(dtype.F32, 0, 9), rankData(dtype.F32, 1, 9)}
	if _, err := collectiveOutputs(comms, devs, dtype.F32, parallel.Sum, data, 2); err != nil {
		t.Fatalf("after the refused calls: %v", err)
	}
}

// TestNCCLAbort aborts rank 1 while rank 0 waits in an all-reduce: rank
// 0's call returns the *AbortError naming rank 1, and later calls fail
// the same way on both ranks.
func TestNCCLAbort(t *testing.T) {
	devs := ncclDevices(t)
	comms := ncclGroup(t, devs)
	x := tensorOf(devs[0], dtype.F32, []float64{1, 2})
	y := tensorOf(devs[1], dtype.F32, []float64{1, 2})
	defer x.Release()
	defer y.Release()
	done := make(chan error, 1)
	go func() { done <- comms[0].AllReduce(x, parallel.Sum) }()
	time.Sleep(50 * time.Millisecond) // let rank 0 wait in its collective
	oom := errors.New("out of memory on rank 1")
	comms[1].Abort(oom)
	var ae *parallel.AbortError
	if err := <-done; !errors.As(err, &ae) || ae.Rank != 1 || !errors.Is(err, oom) {
		t.Fatalf("rank 0's pending all_reduce after rank 1's Abort: %v, want an *AbortError of rank 1 wrapping its error", err)
	}
	for r, c := range comms {
		if err := c.Barrier(); !errors.As(err, &ae) {
			t.Errorf("rank %d: Barrier after Abort: %v, want the *AbortError", r, err)
		}
	}
	for r, d := range devs {
		if got := d.Stats().ByTag[device.Communication].Current; got != int64(x.Len()*4+4) {
			t.Errorf("rank %d after Abort: communication bytes %d, want only the tensors and the barrier's (NCCL's buffers are freed)", r, got)
		}
	}
}

// TestNCCLRankOverAWorld makes each rank's NCCL communicator with
// NewNCCLRank, the unique id broadcast over an existing communicator (here
// the in-process group, standing for MPI's one process per GPU): the
// ranks meet and all-reduce (two ranks, or one on a one-GPU machine).
func TestNCCLRankOverAWorld(t *testing.T) {
	n := cudatest.GPUs(t, 2)
	devs := openGPUs(t, n)
	want := fmt.Sprint([]float64{float64(n+1) / 2, 10})
	err := parallel.Run(parallel.NewGroup(n), func(world parallel.Communicator) error {
		r := world.Rank()
		c, err := parallel.NewNCCLRank(world, devs[r])
		if err != nil {
			return err
		}
		defer c.Close()
		x := tensorOf(devs[r], dtype.F32, []float64{float64(r + 1), 10})
		defer x.Release()
		if err := c.AllReduce(x, parallel.Avg); err != nil {
			return err
		}
		if got := fmt.Sprint(x.Float64s()); got != want || c.Rank() != r || c.Size() != n {
			return fmt.Errorf("rank %d of %d: avg %s, want %s on %d", c.Rank(), c.Size(), got, want, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNCCLMismatchIsAnError has the two ranks all-reduce different
// counts: on the emulator every rank gets NCCL's invalid-usage error (its
// asynchronous error) and no data moves. Real NCCL may hang or corrupt
// memory instead, so the test runs only on the emulator.
func TestNCCLMismatchIsAnError(t *testing.T) {
	if cudatest.Real() {
		t.Skip("real NCCL does not detect ranks that call different counts")
	}
	devs := ncclDevices(t)
	comms := ncclGroup(t, devs)
	err := parallel.Run(comms, func(c parallel.Communicator) error {
		r := c.Rank()
		x := tensorOf(devs[r], dtype.F32, []float64{1, 2, 3, 4, 5}[:4+r])
		defer x.Release()
		err := c.AllReduce(x, parallel.Sum)
		if err == nil || !strings.Contains(err.Error(), "NCCL_INVALID_USAGE") {
			return fmt.Errorf("rank %d: all_reduce of %d elements against %d: %v, want NCCL_INVALID_USAGE", r, 4+r, 5-r, err)
		}
		if got := x.Float64s()[0]; got != 1 {
			return fmt.Errorf("rank %d: element 0 = %v after the refused collective, want 1 (unchanged)", r, got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNCCLForeignIDIsRefused gives the emulator's NCCL a unique id made by
// another process (its pid changed): the fake library connects the ranks
// of one process only, so it must refuse at once — waiting for ranks that
// can never join would hang an --mpi run on the emulator forever.
func TestNCCLForeignIDIsRefused(t *testing.T) {
	if cudatest.Real() {
		t.Skip("real NCCL connects processes: only the emulator refuses")
	}
	dev := openGPUs(t, 1)[0]
	lib, err := icuda.LoadNCCL()
	if err != nil {
		t.Fatal(err)
	}
	id, err := lib.UniqueID()
	if err != nil {
		t.Fatal(err)
	}
	var pid, n int
	if _, err := fmt.Sscanf(string(id[:]), "emu-nccl %d %d", &pid, &n); err != nil {
		t.Fatalf("the emulator's unique id %q: %v", id[:32], err)
	}
	var other icuda.UniqueID
	copy(other[:], fmt.Sprintf("emu-nccl %d %d", pid+1, n))
	done := make(chan error, 1)
	go func() {
		done <- cuda.OnWorker(dev, func() error {
			_, err := lib.CommInitRank(2, 0, other)
			return err
		})
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "NCCL_INVALID_USAGE") {
			t.Fatalf("ncclCommInitRank with another process's id: %v, want NCCL_INVALID_USAGE", err)
		}
	case <-time.After(30 * time.Second):
		// The worker is stuck in the call, so the device's cleanup would
		// hang too: say why and stop the test binary.
		fmt.Fprintln(os.Stderr, "--- FAIL: TestNCCLForeignIDIsRefused: ncclCommInitRank with another process's id still waits after 30 s, want a refusal")
		os.Exit(1)
	}
}
