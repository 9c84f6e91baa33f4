//go:build mpi

package parallel

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

// mpiRanks is how many processes TestMPI launches.
const mpiRanks = 2

// underMPI reports whether this process is a rank started by mpirun.
func underMPI() bool { return os.Getenv("OMPI_COMM_WORLD_SIZE") != "" }

// TestMPI runs this test binary under mpirun -np 2 three times: the
// collectives (TestMPIRanks), an abort followed by no other call
// (TestMPIAbortAlone), and point-to-point transfers with a two-stage
// pipeline whose failing stage aborts (TestMPIPipeRanks). Each launch must finish within its timeout and
// every rank must pass. Under mpirun it is skipped: the ranks run the
// tests it names.
func TestMPI(t *testing.T) {
	if underMPI() {
		t.Skip("a rank under mpirun: TestMPIRanks and TestMPIAbortAlone run here")
	}
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Fatalf("mpirun not found (install openmpi-bin): %v", err)
	}
	args := []string{"--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(mpiRanks)}
	if !mpiRemoteAgent() {
		// OpenMPI's default launcher wants ssh or rsh even on one machine
		args = append(args, "--mca", "plm", "isolated")
	}
	for _, name := range []string{"TestMPIRanks", "TestMPIAbortAlone", "TestMPIPipeRanks", "TestMPIMeshRanks"} {
		start := time.Now()
		out, err := mpiLaunch(mpirun, args, t.TempDir(), name, 60*time.Second)
		t.Logf("mpirun %s %s (%v):\n%s", strings.Join(args, " "), name, time.Since(start).Round(time.Millisecond), out)
		if err != nil {
			t.Errorf("mpirun -np %d %s: %v", mpiRanks, name, err)
			continue
		}
		if got := strings.Count(out, "--- PASS: "+name+" "); got != mpiRanks {
			t.Errorf("%s passed on %d ranks, want %d", name, got, mpiRanks)
		}
	}
}

// mpiRemoteAgent reports whether ssh or rsh, which OpenMPI's default launcher
// requires, is installed.
func mpiRemoteAgent() bool {
	for _, a := range []string{"ssh", "rsh"} {
		if _, err := exec.LookPath(a); err == nil {
			return true
		}
	}
	return false
}

// mpiLaunch runs test name of this binary under mpirun with args and
// HEADROOM_MPI_TEST_DIR=dir; mpirun gets SIGTERM (which ends its ranks)
// after limit, the ranks' tests time out after half of it.
func mpiLaunch(mpirun string, args []string, dir, name string, limit time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	args = append(args[:len(args):len(args)], os.Args[0], "-test.run=^"+name+"$", "-test.v", "-test.timeout="+(limit/2).String())
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := exec.CommandContext(ctx, mpirun, args...)
	cmd.Env = append(os.Environ(), "HEADROOM_MPI_TEST_DIR="+dir)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("no result within %v (a hang): %w", limit, err)
	}
	return string(out), err
}

// rankMPI starts MPI in a rank launched by TestMPI and checks its rank and
// size against mpirun's.
func rankMPI(t *testing.T) *MPI {
	t.Helper()
	if !underMPI() {
		t.Skip("runs as a rank under mpirun, launched by TestMPI")
	}
	m, err := NewMPI()
	if err != nil {
		t.Fatalf("NewMPI: %v", err)
	}
	size, _ := strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_SIZE"))
	rank, _ := strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_RANK"))
	if m.Size() != size || m.Rank() != rank {
		t.Errorf("rank %d of %d, mpirun says %d of %d", m.Rank(), m.Size(), rank, size)
	}
	return m
}

// TestMPIRanks checks every collective against values computed here from
// every rank's inputs (each rank fills its buffers from its rank), then
// the abort path. Every rank runs the same sequence of collectives: checks
// report with Errorf so that a failed one does not skip the rest.
func TestMPIRanks(t *testing.T) {
	m := rankMPI(t)
	defer func() {
		if err := m.Finalize(); err != nil {
			t.Errorf("Finalize: %v", err)
		}
	}()
	dev := cpu.New(0, device.Options{})
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16, dtype.F16} {
		for _, op := range []Op{Sum, Avg} {
			t.Run(fmt.Sprintf("all_reduce/%s/%s", dt, mpiOpName(op)), func(t *testing.T) { mpiCheckAllReduce(t, m, dev, dt, op) })
			t.Run(fmt.Sprintf("reduce_scatter/%s/%s", dt, mpiOpName(op)), func(t *testing.T) { mpiCheckReduceScatter(t, m, dev, dt, op) })
		}
		t.Run(fmt.Sprintf("all_gather/%s", dt), func(t *testing.T) { mpiCheckAllGather(t, m, dev, dt) })
		t.Run(fmt.Sprintf("broadcast/%s", dt), func(t *testing.T) { mpiCheckBroadcast(t, m, dev, dt) })
	}
	t.Run("f64", func(t *testing.T) { mpiCheckF64(t, m, dev) })
	t.Run("views", func(t *testing.T) { mpiCheckViews(t, m, dev) })
	t.Run("in_place", func(t *testing.T) { mpiCheckInPlace(t, m, dev) })
	t.Run("communication_bytes", func(t *testing.T) { mpiCheckBorrowed(t, m, dev) })
	t.Run("barrier", func(t *testing.T) {
		if err := m.Barrier(); err != nil {
			t.Errorf("Barrier: %v", err)
		}
	})
	t.Run("mismatch", func(t *testing.T) { mpiCheckFailures(t, m, dev) })
	t.Run("bandwidth", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-short: no 64 MiB measurement")
		}
		mpiMeasureAllReduce(t, m, dev)
	})
	t.Run("abort", func(t *testing.T) { mpiCheckAbort(t, m, dev) })
	if live := dev.Live(); len(live) != 0 {
		t.Errorf("blocks left on the device: %v", live)
	}
}

// TestMPIAbortAlone: the last rank aborts and makes no further call until
// the others have failed the all-reduce they wait in, which they report by
// creating a file each in $HEADROOM_MPI_TEST_DIR: Abort alone tells them.
func TestMPIAbortAlone(t *testing.T) {
	m := rankMPI(t)
	defer func() {
		if err := m.Finalize(); err != nil {
			t.Errorf("Finalize: %v", err)
		}
	}()
	dir := os.Getenv("HEADROOM_MPI_TEST_DIR")
	if dir == "" {
		t.Errorf("HEADROOM_MPI_TEST_DIR is not set")
		return
	}
	last := m.Size() - 1
	want := fmt.Sprintf("rank %d aborted: loader failed", last)
	if m.Rank() != last {
		dev := cpu.New(0, device.Options{})
		x := autograd.New(dev, dtype.F32, device.Gradient, 8)
		defer x.Release()
		err := m.AllReduce(x, Sum)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("AllReduce while rank %d aborts: %v, want an error containing %q", last, err, want)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("failed.%d", m.Rank())), nil, 0o644); err != nil {
			t.Errorf("report: %v", err)
		}
		return
	}
	time.Sleep(100 * time.Millisecond) // let the others wait first
	m.Abort(errors.New("loader failed"))
	deadline := time.Now().Add(20 * time.Second)
	for r := range last {
		f := filepath.Join(dir, fmt.Sprintf("failed.%d", r))
		for {
			if _, err := os.Stat(f); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("rank %d did not fail its all-reduce within 20s of Abort", r)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := m.Barrier(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Barrier on the aborting rank: %v, want an error containing %q", err, want)
	}
}

func mpiOpName(op Op) string {
	if op == Avg {
		return "avg"
	}
	return "sum"
}

// mpiValues returns rank r's n inputs: seeded random F32 values for F32;
// halves of small integers, exact in BF16 and F16 and in their sums, for
// the 16-bit dtypes.
func mpiValues(r, n int, dt dtype.DType) []float32 {
	v := make([]float32, n)
	if dt == dtype.F32 {
		rng := rand.New(rand.NewPCG(7, uint64(r)))
		for i := range v {
			v[i] = float32(rng.Float64()*2 - 1)
		}
		return v
	}
	for i := range v {
		v[i] = float32((i%13)-6) * 0.5 * float32(r+1)
	}
	return v
}

// mpiReduced returns op over every rank's mpiValues(r, n, dt): the sum in
// float64 (exact for the 16-bit inputs), rounded to F32, divided by Size
// in F32 for Avg, rounded to dt.
func mpiReduced(size, n int, dt dtype.DType, op Op) []float32 {
	sum := make([]float64, n)
	for r := range size {
		for i, x := range mpiValues(r, n, dt) {
			sum[i] += float64(x)
		}
	}
	out := make([]float32, n)
	for i, s := range sum {
		out[i] = float32(s)
		if op == Avg {
			out[i] /= float32(size)
		}
	}
	return mpiRoundTo(dt, out)
}

// mpiRoundTo rounds F32 values to dt and back.
func mpiRoundTo(dt dtype.DType, v []float32) []float32 {
	b := make([]byte, len(v)*dt.Size())
	dtype.FromF32(dt, b, v)
	out := make([]float32, len(v))
	dtype.ToF32(out, dt, b)
	return out
}

// mpiTensor makes a free-standing tensor of dt holding v.
func mpiTensor(dev *device.Device, dt dtype.DType, v []float32, shape ...int) *autograd.Tensor {
	x := autograd.New(dev, dt, device.Gradient, shape...)
	x.SetFloat32s(v)
	return x
}

// mpiSame reports the first difference between got and want: exact with two
// ranks (a sum of two floats rounds once), within 1e-6 relative with more
// (MPI's summation order is its own).
func mpiSame(size int, got, want []float32) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	for i := range got {
		d := float64(got[i] - want[i])
		if d != 0 && (size == 2 || d*d > 1e-12*float64(want[i])*float64(want[i])) {
			return fmt.Errorf("element %d = %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}

func mpiCheckAllReduce(t *testing.T, m *MPI, dev *device.Device, dt dtype.DType, op Op) {
	const n = 1000
	x := mpiTensor(dev, dt, mpiValues(m.Rank(), n, dt), 10, 100)
	defer x.Release()
	if err := m.AllReduce(x, op); err != nil {
		t.Errorf("AllReduce: %v", err)
		return
	}
	if err := mpiSame(m.Size(), x.Float32s(), mpiReduced(m.Size(), n, dt, op)); err != nil {
		t.Errorf("AllReduce(%s, %s): %v", dt, mpiOpName(op), err)
	}
}

func mpiCheckReduceScatter(t *testing.T, m *MPI, dev *device.Device, dt dtype.DType, op Op) {
	const n = 257
	src := mpiTensor(dev, dt, mpiValues(m.Rank(), m.Size()*n, dt), m.Size()*n)
	dst := autograd.New(dev, dt, device.Gradient, n)
	defer src.Release()
	defer dst.Release()
	before := src.Float32s()
	if err := m.ReduceScatter(dst, src, op); err != nil {
		t.Errorf("ReduceScatter: %v", err)
		return
	}
	want := mpiReduced(m.Size(), m.Size()*n, dt, op)[m.Rank()*n : (m.Rank()+1)*n]
	if err := mpiSame(m.Size(), dst.Float32s(), want); err != nil {
		t.Errorf("ReduceScatter(%s, %s) on rank %d: %v", dt, mpiOpName(op), m.Rank(), err)
	}
	if err := mpiSame(2, src.Float32s(), before); err != nil {
		t.Errorf("ReduceScatter changed src: %v", err)
	}
}

func mpiCheckAllGather(t *testing.T, m *MPI, dev *device.Device, dt dtype.DType) {
	const n = 129
	src := mpiTensor(dev, dt, mpiValues(m.Rank(), n, dt), n)
	dst := autograd.New(dev, dt, device.Parameter, m.Size(), n)
	defer src.Release()
	defer dst.Release()
	if err := m.AllGather(dst, src); err != nil {
		t.Errorf("AllGather: %v", err)
		return
	}
	var want []float32
	for r := range m.Size() {
		want = append(want, mpiRoundTo(dt, mpiValues(r, n, dt))...)
	}
	if err := mpiSame(2, dst.Float32s(), want); err != nil {
		t.Errorf("AllGather(%s): %v", dt, err)
	}
}

func mpiCheckBroadcast(t *testing.T, m *MPI, dev *device.Device, dt dtype.DType) {
	const n = 300
	root := m.Size() - 1
	x := mpiTensor(dev, dt, mpiValues(m.Rank(), n, dt), n)
	defer x.Release()
	if err := m.Broadcast(x, root); err != nil {
		t.Errorf("Broadcast: %v", err)
		return
	}
	if err := mpiSame(2, x.Float32s(), mpiRoundTo(dt, mpiValues(root, n, dt))); err != nil {
		t.Errorf("Broadcast(%s) from rank %d on rank %d: %v", dt, root, m.Rank(), err)
	}
}
