package parallel_test

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
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/parallel"
)

var dtypes = []dtype.DType{dtype.F64, dtype.F32, dtype.BF16, dtype.F16}

// rankData returns rank r's n values, rounded to dt.
func rankData(dt dtype.DType, r, n int) []float64 {
	rng := rand.New(rand.NewPCG(uint64(r)+1, 99))
	v := make([]float64, n)
	for i := range v {
		v[i] = round(dt, rng.NormFloat64()*10)
	}
	return v
}

// round rounds x to dt's nearest value (ties to even) through dtype.
func round(dt dtype.DType, x float64) float64 {
	b := make([]byte, dt.Size())
	dtype.FromF64(dt, b, []float64{x})
	out := make([]float64, 1)
	dtype.ToF64(out, dt, b)
	return out[0]
}

// reference computes the reduction of every rank's values at index i the
// way the contract says: in rank order, in F64 for F64 and in F32 for the
// others, divided by n for Avg, rounded once to dt.
func reference(dt dtype.DType, op parallel.Op, data [][]float64, i int) float64 {
	if dt == dtype.F64 {
		s := data[0][i]
		for r := 1; r < len(data); r++ {
			s += data[r][i]
		}
		if op == parallel.Avg {
			s /= float64(len(data))
		}
		return s
	}
	s := float32(data[0][i])
	for r := 1; r < len(data); r++ {
		s += float32(data[r][i])
	}
	if op == parallel.Avg {
		s /= float32(len(data))
	}
	return round(dt, float64(s))
}

// onRanks runs f on n ranks, each with its own cpu device, and fails the
// test on any error or on a leak.
func onRanks(t *testing.T, n int, f func(c parallel.Communicator, dev *device.Device) error) {
	t.Helper()
	devs := make([]*device.Device, n)
	for r := range devs {
		devs[r] = cpu.New(r, device.Options{})
	}
	onDevices(t, devs, nil, f)
}

// onDevices runs f on one rank per device of devs, its communicator
// wrapped by wrap unless nil, and fails the test on any error or on a
// block left beside those the devices held before.
func onDevices(t *testing.T, devs []*device.Device, wrap func(parallel.Communicator) parallel.Communicator, f func(c parallel.Communicator, dev *device.Device) error) {
	t.Helper()
	before := make([]int, len(devs))
	for r, d := range devs {
		before[r] = d.LiveBlocks()
	}
	comms := parallel.NewGroup(len(devs))
	if wrap != nil {
		for r, c := range comms {
			comms[r] = wrap(c)
		}
	}
	if err := parallel.Run(comms, func(c parallel.Communicator) error { return f(c, devs[c.Rank()]) }); err != nil {
		t.Fatal(err)
	}
	for r, d := range devs {
		if d.LiveBlocks() != before[r] {
			t.Errorf("%s leaks %v", d, d.Live())
		}
	}
}

func tensorOf(dev *device.Device, dt dtype.DType, v []float64) *autograd.Tensor {
	t := autograd.New(dev, dt, device.Communication, len(v))
	t.SetFloat64s(v)
	return t
}

// TestCollectivesMatchADirectComputation runs every collective on 1 to 4
// ranks in every dtype and compares each rank's result, bit for bit, with
// the reduction computed directly from all ranks' inputs.
func TestCollectivesMatchADirectComputation(t *testing.T) {
	for n := 1; n <= 4; n++ {
		checkCollectives(t, 1000, func(r int) *device.Device { return cpu.New(r, device.Options{}) }, n, nil)
	}
}

// checkCollectives runs every collective on n ranks, rank r on dev(r)
// with its communicator wrapped by wrap unless nil, in
// every dtype with per elements per rank slot, and compares each rank's
// result, bit for bit, with the reduction computed directly.
func checkCollectives(t *testing.T, per int, dev func(r int) *device.Device, n int, wrap func(parallel.Communicator) parallel.Communicator) {
	t.Helper()
	devs := make([]*device.Device, n)
	for r := range devs {
		devs[r] = dev(r)
	}
	for _, dt := range dtypes {
		for _, op := range []parallel.Op{parallel.Sum, parallel.Avg} {
			name := fmt.Sprintf("n%d/%s/op%d", n, dt, op)
			total := n*per + 3 // not a multiple of the ranks' shares
			data := make([][]float64, n)
			for r := range data {
				data[r] = rankData(dt, r, max(total, n*per))
			}
			fail := func(what string, r, i int, got, want float64) error {
				return fmt.Errorf("%s: %s on rank %d: element %d = %v, want %v", name, what, r, i, got, want)
			}
			onDevices(t, devs, wrap, func(c parallel.Communicator, dev *device.Device) error {
				r := c.Rank()
				x := tensorOf(dev, dt, data[r][:total])
				defer x.Release()
				if err := c.AllReduce(x, op); err != nil {
					return err
				}
				for i, v := range x.Float64s() {
					if want := reference(dt, op, data, i); v != want && !(math.IsNaN(v) && math.IsNaN(want)) {
						return fail("all_reduce", r, i, v, want)
					}
				}
				src := tensorOf(dev, dt, data[r][:n*per])
				dst := autograd.New(dev, dt, device.Communication, per)
				defer src.Release()
				defer dst.Release()
				if err := c.ReduceScatter(dst, src, op); err != nil {
					return err
				}
				for i, v := range dst.Float64s() {
					if want := reference(dt, op, data, r*per+i); v != want {
						return fail("reduce_scatter", r, i, v, want)
					}
				}
				mine := tensorOf(dev, dt, data[r][:per])
				all := autograd.New(dev, dt, device.Communication, n*per)
				defer mine.Release()
				defer all.Release()
				if err := c.AllGather(all, mine); err != nil {
					return err
				}
				got := all.Float64s()
				for q := range n {
					for i := range per {
						if got[q*per+i] != data[q][i] {
							return fail("all_gather", r, q*per+i, got[q*per+i], data[q][i])
						}
					}
				}
				// In place: each rank's slot of the gathered buffer is its src.
				all.Fill(0)
				slot := all.Slice(0, r*per, (r+1)*per)
				slot.SetFloat64s(data[r][:per])
				err := c.AllGather(all, slot)
				slot.Release()
				if err != nil {
					return err
				}
				got = all.Float64s()
				for q := range n {
					if got[q*per+per-1] != data[q][per-1] {
						return fail("all_gather in place", r, q*per+per-1, got[q*per+per-1], data[q][per-1])
					}
				}
				root := n - 1
				b := tensorOf(dev, dt, data[r][:7])
				defer b.Release()
				if err := c.Broadcast(b, root); err != nil {
					return err
				}
				for i, v := range b.Float64s() {
					if v != data[root][i] {
						return fail("broadcast", r, i, v, data[root][i])
					}
				}
				return c.Barrier()
			})
		}
	}
}

// TestCollectiveOnAView reduces a slice in the middle of a buffer: the
// elements around it stay as they were.
func TestCollectiveOnAView(t *testing.T) {
	onRanks(t, 2, func(c parallel.Communicator, dev *device.Device) error {
		buf := tensorOf(dev, dtype.F32, []float64{9, 1, 2, 3, 9})
		defer buf.Release()
		v := buf.Slice(0, 1, 4)
		defer v.Release()
		if err := c.AllReduce(v, parallel.Sum); err != nil {
			return err
		}
		if got := buf.Float64s(); fmt.Sprint(got) != "[9 2 4 6 9]" {
			return fmt.Errorf("rank %d: buffer %v, want [9 2 4 6 9]", c.Rank(), got)
		}
		return nil
	})
}

// TestMismatchesAreErrorsOnEveryRank passes different collectives and
// shapes: every rank must get the error, and the group stays usable.
func TestMismatchesAreErrorsOnEveryRank(t *testing.T) {
	onRanks(t, 3, func(c parallel.Communicator, dev *device.Device) error {
		x := autograd.New(dev, dtype.F32, device.Communication, 4+c.Rank()%2)
		defer x.Release()
		err := c.AllReduce(x, parallel.Sum)
		if err == nil || !strings.Contains(err.Error(), "every rank must pass the same shapes") {
			return fmt.Errorf("rank %d: shapes differ, err = %v", c.Rank(), err)
		}
		if c.Rank() == 1 {
			err = c.Barrier()
		} else {
			v := x.Slice(0, 0, 4)
			err = c.Broadcast(v, 0)
			v.Release()
		}
		if err == nil || !strings.Contains(err.Error(), "every rank must call the same collectives") {
			return fmt.Errorf("rank %d: collectives differ, err = %v", c.Rank(), err)
		}
		y := autograd.New(dev, dtype.I64, device.Communication, 2)
		defer y.Release()
		if err := c.AllReduce(y, parallel.Sum); err == nil || !strings.Contains(err.Error(), "want f64, f32, bf16 or f16") {
			return fmt.Errorf("rank %d: an i64 tensor, err = %v", c.Rank(), err)
		}
		return c.Barrier()
	})
}

// TestAbortWakesEveryWaiter lets ranks 0 and 2 wait in an all-reduce for
// rank 1, which fails instead: both must return an *AbortError wrapping
// rank 1's error, promptly, and every later collective must fail too.
func TestAbortWakesEveryWaiter(t *testing.T) {
	cause := errors.New("rank 1 ran out of memory")
	comms := parallel.NewGroup(3)
	done := make(chan error, 1)
	go func() {
		done <- parallel.Run(comms, func(c parallel.Communicator) error {
			dev := cpu.New(c.Rank(), device.Options{})
			x := autograd.New(dev, dtype.F32, device.Communication, 8)
			defer x.Release()
			if c.Rank() == 1 {
				time.Sleep(20 * time.Millisecond) // the others are waiting by now
				return cause
			}
			err := c.AllReduce(x, parallel.Sum)
			var ab *parallel.AbortError
			if !errors.As(err, &ab) || ab.Rank != 1 || !errors.Is(err, cause) {
				return fmt.Errorf("waiting rank %d got %v, want an AbortError of rank 1", c.Rank(), err)
			}
			if err := c.Barrier(); !errors.Is(err, cause) {
				return fmt.Errorf("a collective after the abort: %v", err)
			}
			return err
		})
	}()
	select {
	case err := <-done:
		var re *parallel.RankError
		if !errors.As(err, &re) || re.Rank != 1 || !errors.Is(err, cause) {
			t.Fatalf("Run = %v, want rank 1's error first", err)
		}
		if strings.Count(err.Error(), "rank ") < 3 {
			t.Errorf("Run's error does not name every rank:\n%v", err)
		}
		t.Logf("Run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("deadlock: the waiting ranks were not woken by the abort")
	}
}

// TestMetaDevicesSynchroniseOnly runs collectives on meta tensors.
func TestMetaDevicesSynchroniseOnly(t *testing.T) {
	comms := parallel.NewGroup(2)
	err := parallel.Run(comms, func(c parallel.Communicator) error {
		dev := meta.New(c.Rank(), device.Options{})
		x := autograd.New(dev, dtype.BF16, device.Communication, 1<<20)
		defer x.Release()
		return c.AllReduce(x, parallel.Avg)
	})
	if err != nil {
		t.Fatal(err)
	}
}
