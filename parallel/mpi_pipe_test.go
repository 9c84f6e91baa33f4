//go:build mpi

package parallel_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/parallel"
)

// TestMPIPipeRanks runs as each of the two ranks TestMPI launches: Send,
// Recv and SendRecv of 1M F32 elements (MPI's rendezvous protocol: the
// exchange needs both sides pending at once), a short message, two-stage
// pipelines of the GPT under both schedules against one device's run
// (bit for bit in F64, computed by each rank in process), and last the
// last stage failing in step 1: rank 0, waiting in a point-to-point call,
// must fail within 20 s with an error naming rank 1.
func TestMPIPipeRanks(t *testing.T) {
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" {
		t.Skip("runs as a rank under mpirun, launched by TestMPI")
	}
	m, err := parallel.NewMPI()
	if err != nil {
		t.Fatalf("NewMPI: %v", err)
	}
	defer func() {
		if err := m.Finalize(); err != nil {
			t.Errorf("Finalize: %v", err)
		}
	}()
	dev := cpu.New(0, device.Options{})
	t.Run("transfers", func(t *testing.T) { mpiCheckTransfers(t, m, dev) })
	for _, sched := range []parallel.Schedule{parallel.OneFOneB, parallel.GPipe} {
		t.Run("pipe/"+sched.String(), func(t *testing.T) {
			ps := smallPipe(dtype.F64, 2, sched)
			ps.steps = 5
			want := ps.reference(t)
			got, err := ps.stage(m, dev)
			if err != nil {
				t.Fatalf("stage %d: %v", m.Rank(), err)
			}
			for name := range want.params {
				if _, ok := got.params[name]; !ok {
					delete(want.params, name) // the other stage's
				}
			}
			if err := compare(got, want, 0); err != nil {
				t.Errorf("stage %d, %s: %v", m.Rank(), sched, err)
			}
		})
	}
	t.Run("failure", func(t *testing.T) {
		ps := smallPipe(dtype.F32, 2, parallel.OneFOneB)
		ps.steps = 3
		ps.failAt = func(r, step, i int) bool { return r == 1 && step == 1 && i == 2 }
		start := time.Now()
		_, err := ps.stage(m, dev)
		if m.Rank() == 1 {
			if err == nil || !strings.Contains(err.Error(), "Loss(2) returned nil") {
				t.Errorf("the failing stage: %v", err)
			}
			m.Abort(err) // what a rank loop does with its error
			return
		}
		if err == nil || !strings.Contains(err.Error(), "rank 1 aborted") || !strings.Contains(err.Error(), "Loss(2) returned nil") {
			t.Errorf("stage 0 while stage 1 fails: %v, want an error naming rank 1 and its error", err)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("stage 0 failed after %v, want ≤ 20 s", d)
		}
		t.Logf("stage 0 failed %v after starting: %v", time.Since(start).Round(time.Millisecond), err)
		if err := m.Barrier(); err == nil || !strings.Contains(err.Error(), "rank 1 aborted") {
			t.Errorf("a collective after the abort: %v, want the abort's error", err)
		}
	})
	if live := dev.Live(); len(live) != 0 {
		t.Errorf("blocks left on the device: %v", live)
	}
}

// mpiCheckTransfers moves 1M F32 values each way and checks them bit for
// bit, then a message shorter and one longer than the receive.
func mpiCheckTransfers(t *testing.T, m *parallel.MPI, dev *device.Device) {
	const n = 1 << 20
	r, peer := m.Rank(), 1-m.Rank()
	send := autograd.New(dev, dtype.F32, device.Activation, n)
	recv := autograd.New(dev, dtype.F32, device.Activation, n)
	defer send.Release()
	defer recv.Release()
	send.SetFloat64s(p2pValues(r, n))
	check := func(what string, from int) {
		if err := sameValues(recv.Float64s(), p2pValues(from, n)); err != nil {
			t.Errorf("%s on rank %d: %v", what, r, err)
		}
	}
	if err := m.SendRecv(send, peer, recv, peer); err != nil {
		t.Fatalf("SendRecv: %v", err)
	}
	check("SendRecv", peer)
	recv.Fill(0)
	var err error
	if r == 0 {
		err = m.Send(send, 1)
	} else {
		err = m.Recv(recv, 0)
		check("Recv", 0)
	}
	if err != nil {
		t.Fatalf("Send/Recv: %v", err)
	}
	// rank 0 sends sent elements, rank 1 receives into got: rank 1's
	// error must contain want, rank 0's send succeeds
	for _, c := range []struct {
		what      string
		sent, got int
		want      string
	}{{"short", 10, 12, "rank 0 sent 40 bytes, rank 1 receives 48"}, {"long", 12, 10, "MPI_ERR_TRUNCATE"}} {
		var err error
		if r == 0 {
			part := send.Slice(0, 0, c.sent)
			err = m.Send(part, 1)
			part.Release()
		} else {
			part := recv.Slice(0, 0, c.got)
			err = m.Recv(part, 0)
			part.Release()
		}
		if r == 1 && (err == nil || !strings.Contains(err.Error(), c.want)) || r == 0 && err != nil {
			t.Errorf("a %s message on rank %d: %v (want %q on rank 1, nil on rank 0)", c.what, r, err, c.want)
		}
	}
	if err := m.Send(send, r); err == nil || !strings.Contains(err.Error(), "names peer") {
		t.Errorf("Send to itself: %v", err)
	}
	if err := m.Barrier(); err != nil {
		t.Errorf("Barrier: %v", err)
	}
}
