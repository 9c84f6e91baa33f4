package parallel

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	dcuda "github.com/headroom-ml/headroom/device/cuda"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/cuda"
)

// ErrNoNCCL is the error (errors.Is) of the NCCL constructors when
// libnccl.so.2 cannot be loaded (HEADROOM_LIBNCCL may name its path).
var ErrNoNCCL = cuda.ErrNoNCCL

// NCCL is one rank's NCCL communicator: a Communicator whose tensors live
// on the rank's cuda device and whose collectives run on that device's
// communication stream (device/cuda's Collective), ordered after the
// kernels queued before each call; the call returns when the collective
// has finished on the GPU. NCCL's own device buffers are counted on the
// device as one resident record tagged communication (op "nccl"). Close
// frees the communicator.
type NCCL struct {
	lib        *cuda.NCCL
	dev        *device.Device
	comm       cuda.Comm
	rank, size int
	held       *device.Held
	barrier    *autograd.Tensor // one F32 that Barrier all-reduces
	clique     *clique
	mu         sync.Mutex
	gone       bool // aborted or closed: comm is freed
}

// clique is what the ranks of one process share: the first Abort.
type clique struct {
	mu    sync.Mutex
	err   *AbortError
	ranks []*NCCL
}

// NewNCCLGroup returns one NCCL communicator per cuda device of devs, in
// rank order, initialised together (the unique id is passed in process).
// Each device must be a distinct open cuda device; on error no
// communicator is left.
func NewNCCLGroup(devs []*device.Device) ([]Communicator, error) {
	if len(devs) == 0 {
		return nil, errors.New("parallel.NewNCCLGroup: no devices, want one cuda device per rank")
	}
	seen := map[*device.Device]bool{}
	for r, d := range devs {
		if d == nil || !dcuda.IsCUDA(d) || seen[d] {
			return nil, fmt.Errorf("parallel.NewNCCLGroup: rank %d's device %v: want a distinct open cuda device per rank", r, d)
		}
		seen[d] = true
	}
	lib, err := cuda.LoadNCCL()
	if err != nil {
		return nil, fmt.Errorf("parallel.NewNCCLGroup: %w", err)
	}
	id, err := lib.UniqueID()
	if err != nil {
		return nil, fmt.Errorf("parallel.NewNCCLGroup: %w", err)
	}
	q := &clique{ranks: make([]*NCCL, len(devs))}
	errs := make([]error, len(devs))
	var wg sync.WaitGroup
	for r, d := range devs {
		wg.Add(1)
		go func() { // every rank's init waits for the others
			defer wg.Done()
			q.ranks[r], errs[r] = newNCCL(lib, d, len(devs), r, id, q)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range q.ranks {
			if c != nil {
				c.Close()
			}
		}
		return nil, fmt.Errorf("parallel.NewNCCLGroup: %w", err)
	}
	cs := make([]Communicator, len(devs))
	for r, c := range q.ranks {
		cs[r] = c
	}
	return cs, nil
}

// NewNCCLRank makes this process's rank of an NCCL clique with one process
// per GPU: rank world.Rank() of world.Size() on the cuda device dev. Rank 0
// makes the unique id and broadcasts it over world (the MPI communicator,
// say) as a small F32 tensor on a temporary cpu device; every process must
// call it together.
func NewNCCLRank(world Communicator, dev *device.Device) (*NCCL, error) {
	if dev == nil || !dcuda.IsCUDA(dev) {
		return nil, fmt.Errorf("parallel.NewNCCLRank: device %v: want an open cuda device", dev)
	}
	lib, err := cuda.LoadNCCL()
	if err != nil {
		return nil, fmt.Errorf("parallel.NewNCCLRank: %w", err)
	}
	var id cuda.UniqueID
	if world.Rank() == 0 {
		if id, err = lib.UniqueID(); err != nil {
			return nil, fmt.Errorf("parallel.NewNCCLRank: %w", err)
		}
	}
	if id, err = shareID(world, id); err != nil {
		return nil, fmt.Errorf("parallel.NewNCCLRank: broadcasting the unique id: %w", err)
	}
	c, err := newNCCL(lib, dev, world.Size(), world.Rank(), id, &clique{})
	if err != nil {
		return nil, fmt.Errorf("parallel.NewNCCLRank: %w", err)
	}
	c.clique.ranks = []*NCCL{c}
	return c, nil
}

// eagerConnect sets NCCL_RUNTIME_CONNECT=0 unless the environment sets
// it: NCCL 2.22 and later connect ranks, and allocate the buffers of
// those connections, at the first collective by default; connected at
// initialisation, all of NCCL's memory is there when newNCCL measures it.
var eagerConnect = sync.OnceFunc(func() {
	if _, set := os.LookupEnv("NCCL_RUNTIME_CONNECT"); !set {
		os.Setenv("NCCL_RUNTIME_CONNECT", "0")
	}
})

// newNCCL initialises one rank on its device's worker and records the
// driver memory the initialisation took as NCCL's.
func newNCCL(lib *cuda.NCCL, dev *device.Device, n, r int, id cuda.UniqueID, q *clique) (*NCCL, error) {
	eagerConnect()
	drv, err := cuda.LoadDriver()
	if err != nil {
		return nil, err
	}
	c := &NCCL{lib: lib, dev: dev, rank: r, size: n, clique: q}
	var used int64
	err = dcuda.OnWorker(dev, func() error {
		before, _, err := drv.MemInfo()
		if err != nil {
			return err
		}
		if c.comm, err = lib.CommInitRank(n, r, id); err != nil {
			return err
		}
		after, _, err := drv.MemInfo()
		used = before - after
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("rank %d on %s: %w", r, dev.Name(), err)
	}
	c.held, err = dev.Hold(max(used, 0), device.Label{Tag: device.Communication, Op: "nccl"})
	if err == nil {
		err = autograd.Try(func() { c.barrier = autograd.New(dev, dtype.F32, device.Communication, 1) })
	}
	if err == nil {
		c.barrier.Block().MarkResident() // held for the communicator's life
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("rank %d on %s: %w", r, dev.Name(), err)
	}
	return c, nil
}

// Rank is this rank's index.
func (c *NCCL) Rank() int { return c.rank }

// Size is the number of ranks.
func (c *NCCL) Size() int { return c.size }

// DriverBytes returns the device memory NCCL took at initialisation (the
// driver's used bytes after less before), as counted on the device.
func (c *NCCL) DriverBytes() int64 { return c.held.Bytes() }

// Close frees the communicator (after its queued work) and its record on
// the device. Close after Abort frees only the record; it is idempotent.
func (c *NCCL) Close() error {
	c.mu.Lock()
	gone := c.gone
	c.gone = true
	c.mu.Unlock()
	if c.barrier != nil {
		c.barrier.Release()
		c.barrier = nil
	}
	var err error
	if !gone && c.comm != 0 {
		err = dcuda.OnWorker(c.dev, func() error { return c.lib.Destroy(c.comm) })
	}
	if c.held != nil {
		c.held.Release()
	}
	return err
}

// Abort makes every pending and future collective of every rank of this
// process fail with an *AbortError naming this rank: it calls
// ncclCommAbort on each of them (ranks in other processes see NCCL's
// remote error, or wait, as NCCL decides). The first Abort wins.
func (c *NCCL) Abort(err error) {
	q := c.clique
	q.mu.Lock()
	if q.err == nil {
		q.err = &AbortError{Rank: c.rank, Err: err}
	}
	ranks := q.ranks
	q.mu.Unlock()
	for _, o := range ranks {
		o.abortComm()
	}
}

// abortComm frees the rank's communicator at once (NCCL may be called so
// from any thread) and ends its record.
func (o *NCCL) abortComm() {
	o.mu.Lock()
	gone := o.gone
	o.gone = true
	o.mu.Unlock()
	if !gone && o.comm != 0 {
		_ = o.lib.Abort(o.comm)
		o.held.Release()
	}
}

// aborted returns the clique's *AbortError, nil when none.
func (c *NCCL) aborted() error {
	c.clique.mu.Lock()
	defer c.clique.mu.Unlock()
	if c.clique.err == nil {
		return nil
	}
	return c.clique.err
}
