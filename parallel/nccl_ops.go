package parallel

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	dcuda "github.com/headroom-ml/headroom/device/cuda"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/cuda"
)

// ncclBuf is a checked tensor of a collective: its device address, its
// elements and NCCL's data type.
type ncclBuf struct {
	p     cuda.DevPtr
	n, es int64 // elements, bytes each
	dt    int
}

// buf checks that t is a live, contiguous tensor of F32, F16, BF16 or F64
// on this rank's device, naming the op and the argument otherwise.
func (c *NCCL) buf(op, arg string, t *autograd.Tensor) (ncclBuf, error) {
	if t == nil || t.Block() == nil {
		return ncclBuf{}, fmt.Errorf("parallel: nccl %s on rank %d: %s is nil or released", op, c.rank, arg)
	}
	if t.Device() != c.dev {
		return ncclBuf{}, fmt.Errorf("parallel: nccl %s on rank %d: %s is on %s, want this rank's %s", op, c.rank, arg, t.Device().Name(), c.dev.Name())
	}
	if !t.IsContiguous() {
		return ncclBuf{}, fmt.Errorf("parallel: nccl %s on rank %d: %s %v (strides %v) is not contiguous", op, c.rank, arg, t.Shape(), t.Strides())
	}
	dt, ok := ncclTypes[t.DType()]
	if !ok {
		return ncclBuf{}, fmt.Errorf("parallel: nccl %s on rank %d: %s is %s, want F32, F16, BF16 or F64", op, c.rank, arg, t.DType())
	}
	p := t.Block().Ptr() + uintptr(t.Offset()*t.DType().Size())
	return ncclBuf{cuda.DevPtr(p), int64(t.Len()), int64(t.DType().Size()), dt}, nil
}

var ncclTypes = map[dtype.DType]int{dtype.F32: cuda.NcclFloat32, dtype.F16: cuda.NcclFloat16, dtype.BF16: cuda.NcclBfloat16, dtype.F64: cuda.NcclFloat64}

func ncclOp(name string, op Op) (int, error) {
	switch op {
	case Sum:
		return cuda.NcclSum, nil
	case Avg:
		return cuda.NcclAvg, nil
	}
	return 0, fmt.Errorf("parallel: nccl %s: unknown op %d", name, op)
}

// run queues one collective through the device's communication stream and
// reports the clique's abort, the call's failure or NCCL's asynchronous
// error, in that order.
func (c *NCCL) run(name string, queue func(cm cuda.Comm, s cuda.Stream) error) error {
	if err := c.aborted(); err != nil {
		return err
	}
	c.mu.Lock()
	gone := c.gone
	c.mu.Unlock()
	if gone {
		return fmt.Errorf("parallel: nccl %s on rank %d: the communicator is closed", name, c.rank)
	}
	err := dcuda.Collective(c.dev, "nccl "+name, func(s uintptr) error { return queue(c.comm, cuda.Stream(s)) })
	if aerr := c.aborted(); aerr != nil {
		return aerr
	}
	if err == nil {
		err = c.lib.AsyncError(c.comm)
	}
	if err != nil {
		return fmt.Errorf("parallel: nccl %s on rank %d: %w", name, c.rank, err)
	}
	return nil
}

// AllReduce replaces t by the reduction over ranks (in place).
func (c *NCCL) AllReduce(t *autograd.Tensor, op Op) error {
	b, err := c.buf("all_reduce", "t", t)
	if err != nil {
		return err
	}
	rop, err := ncclOp("all_reduce", op)
	if err != nil {
		return err
	}
	return c.run("all_reduce", func(cm cuda.Comm, s cuda.Stream) error {
		return c.lib.AllReduce(b.p, b.p, b.n, b.dt, rop, cm, s)
	})
}

// ReduceScatter leaves in dst this rank's slice of the reduction of src.
func (c *NCCL) ReduceScatter(dst, src *autograd.Tensor, op Op) error {
	d, err := c.buf("reduce_scatter", "dst", dst)
	if err != nil {
		return err
	}
	s, err := c.buf("reduce_scatter", "src", src)
	if err != nil {
		return err
	}
	rop, err := ncclOp("reduce_scatter", op)
	if err != nil {
		return err
	}
	if s.dt != d.dt || s.n != int64(c.size)*d.n {
		return fmt.Errorf("parallel: nccl reduce_scatter: src %v %s for dst %v %s on %d ranks: want %d·%d elements of dst's dtype",
			src.Shape(), src.DType(), dst.Shape(), dst.DType(), c.size, c.size, d.n)
	}
	if overlaps(d, s) {
		return fmt.Errorf("parallel: nccl reduce_scatter on rank %d: dst overlaps src", c.rank)
	}
	return c.run("reduce_scatter", func(cm cuda.Comm, st cuda.Stream) error {
		return c.lib.ReduceScatter(s.p, d.p, d.n, d.dt, rop, cm, st)
	})
}

// AllGather concatenates every rank's src into dst, in rank order; src
// may be dst's own slot (in place).
func (c *NCCL) AllGather(dst, src *autograd.Tensor) error {
	d, err := c.buf("all_gather", "dst", dst)
	if err != nil {
		return err
	}
	s, err := c.buf("all_gather", "src", src)
	if err != nil {
		return err
	}
	if s.dt != d.dt || d.n != int64(c.size)*s.n {
		return fmt.Errorf("parallel: nccl all_gather: dst %v %s for src %v %s on %d ranks: want %d·%d elements of src's dtype",
			dst.Shape(), dst.DType(), src.Shape(), src.DType(), c.size, c.size, s.n)
	}
	slot := d.p + cuda.DevPtr(int64(c.rank)*s.n*s.es)
	if s.p != slot && overlaps(d, s) {
		return fmt.Errorf("parallel: nccl all_gather on rank %d: src overlaps dst but is not its slot %d", c.rank, c.rank)
	}
	return c.run("all_gather", func(cm cuda.Comm, st cuda.Stream) error {
		return c.lib.AllGather(s.p, d.p, s.n, s.dt, cm, st)
	})
}

// Broadcast copies root's t into every rank's t.
func (c *NCCL) Broadcast(t *autograd.Tensor, root int) error {
	b, err := c.buf("broadcast", "t", t)
	if err != nil {
		return err
	}
	if root < 0 || root >= c.size {
		return fmt.Errorf("parallel: nccl broadcast: root %d out of range for %d ranks", root, c.size)
	}
	return c.run("broadcast", func(cm cuda.Comm, s cuda.Stream) error {
		return c.lib.Broadcast(b.p, b.p, b.n, b.dt, root, cm, s)
	})
}

// Barrier returns when every rank has called it: an all-reduce of one F32.
func (c *NCCL) Barrier() error {
	b, err := c.buf("barrier", "its buffer", c.barrier)
	if err != nil {
		return err
	}
	return c.run("barrier", func(cm cuda.Comm, s cuda.Stream) error {
		return c.lib.AllReduce(b.p, b.p, 1, b.dt, cuda.NcclSum, cm, s)
	})
}

// overlaps reports whether two buffers share a byte.
func overlaps(a, b ncclBuf) bool {
	return a.p < b.p+cuda.DevPtr(b.n*b.es) && b.p < a.p+cuda.DevPtr(a.n*a.es)
}

// shareID broadcasts rank 0's unique id over world as 64 F32 values of
// 16 bits each (exact integers, so any communicator carries them
// unchanged), on a temporary cpu device.
func shareID(world Communicator, id cuda.UniqueID) (cuda.UniqueID, error) {
	host := cpu.New(0, device.Options{})
	defer host.Close()
	vals := make([]float32, len(id)/2)
	for i := range vals {
		vals[i] = float32(uint16(id[2*i]) | uint16(id[2*i+1])<<8)
	}
	var t *autograd.Tensor
	if err := autograd.Try(func() { t = autograd.FromFloat32s(host, []int{len(vals)}, vals) }); err != nil {
		return id, err
	}
	defer t.Release()
	if err := world.Broadcast(t, 0); err != nil {
		return id, err
	}
	for i, v := range t.Float32s() {
		u := uint16(v)
		id[2*i], id[2*i+1] = byte(u), byte(u>>8)
	}
	return id, nil
}
