package parallel_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/parallel"
)

// p2pValues is rank r's n values for a point-to-point test, distinct per
// rank and element and exact in every float dtype.
func p2pValues(r, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(r*8+i%16) * 0.25
	}
	return v
}

// p2pRun runs f on n in-process ranks, each on its own cpu device, and
// fails the test if Run does not return within limit.
func p2pRun(t *testing.T, n int, limit time.Duration, f func(c parallel.Communicator, p parallel.PointToPoint, dev *device.Device) error) error {
	t.Helper()
	return p2pOn(t, func(r int) *device.Device { return cpu.New(r, device.Options{}) }, nil, n, limit, f)
}

// p2pOn is p2pRun with rank r on dev(r), its communicator wrapped by
// wrap unless nil.
func p2pOn(t *testing.T, dev func(r int) *device.Device, wrap func(parallel.Communicator) parallel.Communicator, n int, limit time.Duration, f func(c parallel.Communicator, p parallel.PointToPoint, dev *device.Device) error) error {
	t.Helper()
	devs := make([]*device.Device, n)
	for r := range devs {
		devs[r] = dev(r)
	}
	done := make(chan error, 1)
	go func() {
		done <- parallel.Run(parallel.NewGroup(n), func(c parallel.Communicator) error {
			if wrap != nil {
				c = wrap(c)
			}
			return f(c, c.(parallel.PointToPoint), devs[c.Rank()])
		})
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("no result within %v: a deadlock", limit)
		return nil
	}
}

// TestSendRecv moves rank r's values around a ring of 4 ranks with
// SendRecv (every rank sends and receives at once, which Send then Recv
// would deadlock on) and then from rank 0 to rank 3 with Send and Recv,
// in F64, F32 and BF16, into views of larger tensors; what arrives must
// equal what was sent bit for bit, and the neighbours of the view must
// not change.
func TestSendRecv(t *testing.T) {
	checkSendRecv(t, func(r int) *device.Device { return cpu.New(r, device.Options{}) }, nil, 4)
}

// TestSendRecvOnCudaRanks is TestSendRecv with ranks 0 and 1 on the two
// emulated GPUs (rank 0 only where there is one GPU) and the others on
// the cpu, with the staging bound lowered to 96 bytes: a cuda rank sends
// in rounds of at most 96 bytes read into its staging slice.
func TestSendRecvOnCudaRanks(t *testing.T) {
	defer parallel.SetStageBytes(96)()
	gpus := openGPUs(t, cudatest.GPUs(t, 2))
	checkSendRecv(t, func(r int) *device.Device {
		if r < len(gpus) {
			return gpus[r]
		}
		return cpu.New(r, device.Options{})
	}, nil, 4)
}

// TestHostStagedSendRecvOnTwoGPUs is TestSendRecv on the two emulated
// GPUs (one rank each; it fails naming the need on fewer) through HostStaged over the in-process group, which
// then sees host tensors only (as MPI must), in rounds of at most 96
// bytes: bit for bit, and every staging tensor freed.
func TestHostStagedSendRecvOnTwoGPUs(t *testing.T) {
	defer parallel.SetStageBytes(96)()
	cudatest.NeedGPUs(t, 2)
	gpus := openGPUs(t, 2)
	hosts := []*device.Device{cpu.New(100, device.Options{}), cpu.New(101, device.Options{})}
	checkSendRecv(t, func(r int) *device.Device { return gpus[r] },
		func(c parallel.Communicator) parallel.Communicator { return parallel.HostStaged(c, hosts[c.Rank()]) }, 2)
	for _, h := range hosts {
		st := h.Stats().ByTag[device.Communication]
		if st.Current != 0 || st.Peak == 0 || st.Peak > 2*96 {
			t.Errorf("%s: staging bytes current %d peak %d, want 0 and (0, 192]", h, st.Current, st.Peak)
		}
	}
}

func checkSendRecv(t *testing.T, devOf func(r int) *device.Device, wrap func(parallel.Communicator) parallel.Communicator, ranks int) {
	t.Helper()
	const n = 300
	for _, dt := range []dtype.DType{dtype.F64, dtype.F32, dtype.BF16} {
		err := p2pOn(t, devOf, wrap, ranks, 10*time.Second, func(c parallel.Communicator, p parallel.PointToPoint, dev *device.Device) error {
			r := c.Rank()
			send := autograd.New(dev, dt, device.Activation, n)
			send.SetFloat64s(p2pValues(r, n))
			base := autograd.New(dev, dt, device.Activation, 3, n)
			base.Fill(-1)
			recv := base.Slice(0, 1, 2)
			defer func() { send.Release(); recv.Release(); base.Release() }()
			from := (r + ranks - 1) % ranks
			if err := p.SendRecv(send, (r+1)%ranks, recv, from); err != nil {
				return err
			}
			if err := sameValues(base.Float64s(), append(append(constants(n, -1), p2pValues(from, n)...), constants(n, -1)...)); err != nil {
				return fmt.Errorf("%s: SendRecv from rank %d: %w", dt, from, err)
			}
			switch r {
			case 0:
				return p.Send(send, ranks-1)
			case ranks - 1:
				if err := p.Recv(recv, 0); err != nil {
					return err
				}
				if err := sameValues(recv.Float64s(), p2pValues(0, n)); err != nil {
					return fmt.Errorf("%s: Recv from rank 0: %w", dt, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", dt, err)
		}
	}
}

func constants(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// sameValues reports the first element where got and want differ.
func sameValues(got, want []float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("element %d = %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}

// TestSendRecvFailures: a size mismatch fails both sides; a bad peer
// fails at once; a pending Recv fails with *AbortError naming the rank
// that failed; a Recv from a rank that returned without sending fails.
func TestSendRecvFailures(t *testing.T) {
	err := p2pRun(t, 2, 10*time.Second, func(c parallel.Communicator, p parallel.PointToPoint, dev *device.Device) error {
		x := autograd.New(dev, dtype.F32, device.Activation, 4+c.Rank())
		defer x.Release()
		if err := p.Send(x, c.Rank()); err == nil || !strings.Contains(err.Error(), "names peer") {
			return fmt.Errorf("Send to itself: %v, want an error naming the peer", err)
		}
		var err error
		if c.Rank() == 0 {
			err = p.Send(x, 1)
		} else {
			err = p.Recv(x, 0)
		}
		if err == nil || !strings.Contains(err.Error(), "sent 4 elements of f32 to rank 1, which receives 5") {
			return fmt.Errorf("mismatched sizes: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Errorf("mismatch: %v", err)
	}

	boom := errors.New("stage failed")
	start := time.Now()
	err = p2pRun(t, 3, 10*time.Second, func(c parallel.Communicator, p parallel.PointToPoint, dev *device.Device) error {
		x := autograd.New(dev, dtype.F32, device.Activation, 8)
		defer x.Release()
		switch c.Rank() {
		case 0:
			return p.Recv(x, 1) // waits for a rank that fails instead
		case 1:
			time.Sleep(50 * time.Millisecond)
			return boom
		}
		return p.Send(x, 0) // a send nobody takes
	})
	var ae *parallel.AbortError
	if !errors.Is(err, boom) || !errors.As(err, &ae) || ae.Rank != 1 || strings.Count(err.Error(), "rank 1 failed") != 2 {
		t.Errorf("rank 1 failing: Run = %v, want rank 1's error and an *AbortError naming it on ranks 0 and 2", err)
	}
	t.Logf("abort reached the waiting ranks in %v", time.Since(start).Round(time.Millisecond))

	err = p2pRun(t, 2, 10*time.Second, func(c parallel.Communicator, p parallel.PointToPoint, dev *device.Device) error {
		if c.Rank() == 0 {
			return nil
		}
		x := autograd.New(dev, dtype.F32, device.Activation, 8)
		defer x.Release()
		return p.Recv(x, 0)
	})
	if err == nil || !strings.Contains(err.Error(), "rank 0 has returned from Run without sending to rank 1") {
		t.Errorf("Recv from a rank that returned: %v", err)
	}
}
