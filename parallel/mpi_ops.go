//go:build mpi

package parallel

import (
	"fmt"
	"unsafe"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// the collectives, as the header names them
const (
	mpiKindAllReduce = iota + 1
	mpiKindReduceScatter
	mpiKindAllGather
	mpiKindBroadcast
	mpiKindBarrier
)

var _ Communicator = (*MPI)(nil)

// AllReduce replaces t on every rank by the sum (Sum) or the mean (Avg:
// the sum divided by Size) of every rank's t: MPI_Allreduce with MPI_SUM
// in F32 (in F64 for F64).
func (m *MPI) AllReduce(t *autograd.Tensor, op Op) error {
	const name = "all_reduce"
	m.mu.Lock()
	defer m.mu.Unlock()
	var b mpiBorrowed
	defer b.release()
	s, err := b.open(name, "t", t, true)
	if err == nil {
		err = mpiCheckOp(op)
	}
	var acc []byte // the values reduced, F32 or F64
	if err == nil {
		acc, err = b.widen(name, s, false)
	}
	if err := m.begin(mpiCall{op: name, kind: mpiKindAllReduce, elems: int64(s.n), dtype: int64(s.dt), arg: int64(op)}, err); err != nil {
		return err
	}
	if s.n == 0 {
		return nil
	}
	if err := m.allReduce(name, unsafe.Pointer(&acc[0]), s.n, mpiAccKind(s.dt)); err != nil {
		m.settle(err)
		return err
	}
	m.scale(acc, s.dt, op)
	return s.store(acc)
}

// ReduceScatter reduces src (Size·n elements) across ranks and writes
// this rank's n elements [Rank·n, (Rank+1)·n) of the result to dst:
// MPI_Reduce_scatter_block in F32 (in F64 for F64). dst may be a view of
// src.
func (m *MPI) ReduceScatter(dst, src *autograd.Tensor, op Op) error {
	const name = "reduce_scatter"
	m.mu.Lock()
	defer m.mu.Unlock()
	var b mpiBorrowed
	defer b.release()
	in, err := b.open(name, "src", src, true)
	var out mpiSpan
	if err == nil {
		out, err = b.open(name, "dst", dst, false)
	}
	if err == nil {
		err = mpiCheckOp(op)
	}
	if err == nil && (in.dt != out.dt || in.n != m.size*out.n) {
		err = fmt.Errorf("src %v %s must hold Size (%d) × dst's %d elements %s", src.Shape(), in.dt, m.size, out.n, out.dt)
	}
	// F32 and F64 operands that do not overlap go to MPI as they are;
	// otherwise src is reduced in place in an F32 (F64) copy whose first
	// n elements are the result.
	wide := in.dt == dtype.F32 || in.dt == dtype.F64
	direct := err == nil && wide && !mpiOverlap(in.b, out.b)
	var acc []byte
	if err == nil && !direct {
		acc, err = b.widen(name, in, true)
	}
	if err := m.begin(mpiCall{op: name, kind: mpiKindReduceScatter, elems: int64(out.n), dtype: int64(out.dt), arg: int64(op)}, err); err != nil {
		return err
	}
	if out.n == 0 {
		return nil
	}
	kind := mpiAccKind(out.dt)
	if direct {
		if err := m.reduceScatter(name, unsafe.Pointer(&in.b[0]), unsafe.Pointer(&out.b[0]), out.n, kind); err != nil {
			m.settle(err)
			return err
		}
		m.scale(out.b, out.dt, op)
		return out.store(out.b)
	}
	if err := m.reduceScatter(name, nil, unsafe.Pointer(&acc[0]), out.n, kind); err != nil {
		m.settle(err)
		return err
	}
	res := acc[:len(acc)/m.size]
	m.scale(res, out.dt, op)
	return out.store(res)
}

// AllGather writes every rank's src (n elements) to dst (Size·n
// elements) in rank order: MPI_Allgather. src may be this rank's part of
// dst (dst.Slice(0, Rank·n, (Rank+1)·n) of a flat dst), which gathers in
// place.
func (m *MPI) AllGather(dst, src *autograd.Tensor) error {
	const name = "all_gather"
	m.mu.Lock()
	defer m.mu.Unlock()
	var b mpiBorrowed
	defer b.release()
	in, err := b.open(name, "src", src, true)
	var out mpiSpan
	if err == nil {
		out, err = b.open(name, "dst", dst, false)
	}
	if err == nil && (in.dt != out.dt || out.n != m.size*in.n) {
		err = fmt.Errorf("dst %v %s must hold Size (%d) × src's %d elements %s", dst.Shape(), out.dt, m.size, in.n, in.dt)
	}
	var from unsafe.Pointer // nil: in place
	if err == nil && in.n > 0 {
		sz := in.dt.Size()
		own := out.b[m.rank*in.n*sz : (m.rank+1)*in.n*sz]
		switch {
		case !mpiOverlap(in.b, out.b):
			from = unsafe.Pointer(&in.b[0])
		case &in.b[0] == &own[0]:
			// src is this rank's part of dst
		default:
			var c []byte
			if c, err = b.bytes(name, out.t.Device(), len(in.b)); err == nil {
				copy(c, in.b)
				from = unsafe.Pointer(&c[0])
			}
		}
	}
	if err := m.begin(mpiCall{op: name, kind: mpiKindAllGather, elems: int64(in.n), dtype: int64(in.dt)}, err); err != nil {
		return err
	}
	if in.n == 0 {
		return nil
	}
	if err := m.allGather(name, from, unsafe.Pointer(&out.b[0]), in.n, mpiElemKind(in.dt)); err != nil {
		m.settle(err)
		return err
	}
	return out.flush()
}

// Broadcast copies root's t into every rank's t: MPI_Bcast.
func (m *MPI) Broadcast(t *autograd.Tensor, root int) error {
	const name = "broadcast"
	m.mu.Lock()
	defer m.mu.Unlock()
	var b mpiBorrowed
	defer b.release()
	var s mpiSpan
	var err error
	if root < 0 || root >= m.size {
		err = fmt.Errorf("root %d out of range [0, %d)", root, m.size)
	} else {
		s, err = b.open(name, "t", t, root == m.rank)
	}
	if err := m.begin(mpiCall{op: name, kind: mpiKindBroadcast, elems: int64(s.n), dtype: int64(s.dt), arg: int64(root)}, err); err != nil {
		return err
	}
	if s.n == 0 {
		return nil
	}
	if err := m.bcast(name, unsafe.Pointer(&s.b[0]), s.n, mpiElemKind(s.dt), root); err != nil {
		m.settle(err)
		return err
	}
	if m.rank == root {
		return nil
	}
	return s.flush()
}

// Barrier returns when every rank has called it. The collective header,
// an all-reduce every rank must join, is the barrier.
func (m *MPI) Barrier() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.begin(mpiCall{op: "barrier", kind: mpiKindBarrier}, nil)
}

// scale turns a sum acc, accumulated for dtype dt, into op's result.
func (m *MPI) scale(acc []byte, dt dtype.DType, op Op) {
	if op != Avg {
		return
	}
	if dt == dtype.F64 {
		v, n := dtype.AsF64(acc), float64(m.size)
		for i := range v {
			v[i] /= n
		}
		return
	}
	v, n := dtype.AsF32(acc), float32(m.size)
	for i := range v {
		v[i] /= n
	}
}

func mpiCheckOp(op Op) error {
	if op != Sum && op != Avg {
		return fmt.Errorf("unknown op %d (want Sum or Avg)", int(op))
	}
	return nil
}

// mpiElemKind is the MPI type that moves dt's elements.
func mpiElemKind(dt dtype.DType) int {
	switch dt {
	case dtype.F32:
		return mpiF32
	case dtype.F64:
		return mpiF64
	}
	return mpi16
}

// mpiAccKind is the MPI type dt reduces in: F64 for F64, else F32.
func mpiAccKind(dt dtype.DType) int {
	if dt == dtype.F64 {
		return mpiF64
	}
	return mpiF32
}

// mpiOverlap reports whether two host byte ranges share memory.
func mpiOverlap(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}

// mpiSpan is a tensor's elements as dense host bytes: the tensor's own memory
// when it is contiguous, else a dense copy on its device (tmp).
type mpiSpan struct {
	t   *autograd.Tensor
	dt  dtype.DType
	n   int
	b   []byte
	tmp *autograd.Tensor
}

// store writes the reduced values acc (F32, or F64 for F64; s.n of
// them) to the span's tensor, narrowing 16-bit dtypes; when acc is the
// span's own bytes it only publishes them.
func (s mpiSpan) store(acc []byte) error {
	switch s.dt {
	case dtype.F32, dtype.F64:
		if &acc[0] != &s.b[0] {
			copy(s.b, acc)
		}
	case dtype.F16:
		kernels.F32ToF16(dtype.AsU16(s.b), dtype.AsF32(acc))
	case dtype.BF16:
		kernels.F32ToBF16(dtype.AsU16(s.b), dtype.AsF32(acc))
	}
	return s.flush()
}

// flush publishes the span's bytes to its tensor: copies a strided
// tensor's dense copy back, and marks the tensor's storage as written.
func (s mpiSpan) flush() error {
	if s.tmp != nil {
		return autograd.Try(func() { s.t.CopyFrom(s.tmp) })
	}
	s.t.Block().Bump()
	return nil
}

// mpiBorrowed holds what a collective borrows from devices, all under
// device.Communication, until it returns.
type mpiBorrowed struct {
	blocks  []*device.Block
	tensors []*autograd.Tensor
}

func (b *mpiBorrowed) release() {
	for _, k := range b.blocks {
		k.Release()
	}
	for _, t := range b.tensors {
		t.Release()
	}
}

// open checks that t (argument arg of collective name) can be
// communicated and returns its span; a strided t gets a dense copy, filled
// from t when fill is set.
func (b *mpiBorrowed) open(name, arg string, t *autograd.Tensor, fill bool) (mpiSpan, error) {
	switch {
	case t == nil:
		return mpiSpan{}, fmt.Errorf("%s is nil", arg)
	case t.Released():
		return mpiSpan{}, fmt.Errorf("%s %v is released", arg, t.Shape())
	}
	dt := t.DType()
	if dt != dtype.F32 && dt != dtype.BF16 && dt != dtype.F16 && dt != dtype.F64 {
		return mpiSpan{}, fmt.Errorf("%s %v has dtype %s, want f32, bf16, f16 or f64", arg, t.Shape(), dt)
	}
	host := t.Block().Bytes()
	if host == nil {
		return mpiSpan{}, fmt.Errorf("%s %v is on device %s, which has no host memory", arg, t.Shape(), t.Device().Name())
	}
	s := mpiSpan{t: t, dt: dt, n: t.Len()}
	if t.IsContiguous() {
		off := t.Offset() * dt.Size()
		s.b = host[off : off+int(t.Bytes())]
		return s, nil
	}
	err := autograd.Try(func() {
		s.tmp = autograd.New(t.Device(), dt, device.Communication, t.Shape()...)
		s.tmp.Block().Relabel("mpi "+name, "")
		if fill {
			s.tmp.CopyFrom(t)
		}
	})
	if s.tmp != nil {
		b.tensors = append(b.tensors, s.tmp)
	}
	if err != nil {
		return mpiSpan{}, fmt.Errorf("dense copy of strided %s %v: %w", arg, t.Shape(), err)
	}
	s.b = s.tmp.Block().Bytes()
	return s, nil
}

// bytes borrows n bytes on dev.
func (b *mpiBorrowed) bytes(name string, dev *device.Device, n int) ([]byte, error) {
	k, err := dev.Alloc(int64(n), device.Label{Tag: device.Communication, Op: "mpi " + name})
	if err != nil {
		return nil, fmt.Errorf("borrowing %d bytes: %w", n, err)
	}
	b.blocks = append(b.blocks, k)
	return k.Bytes(), nil
}

// widen returns s's elements in the dtype they reduce in (F32, or F64
// for F64), to be reduced in place: s's own dense bytes when they are F32
// or F64 and may be overwritten (the tensor's memory unless private, or
// its dense copy), else a copy on s's device.
func (b *mpiBorrowed) widen(name string, s mpiSpan, private bool) ([]byte, error) {
	if s.n == 0 {
		return nil, nil
	}
	wide := s.dt == dtype.F32 || s.dt == dtype.F64
	if wide && (!private || s.tmp != nil) {
		return s.b, nil
	}
	size := 4
	if wide {
		size = s.dt.Size()
	}
	c, err := b.bytes(name, s.t.Device(), size*s.n)
	if err != nil {
		return nil, err
	}
	switch s.dt {
	case dtype.F32, dtype.F64:
		copy(c, s.b)
	case dtype.F16:
		kernels.F16ToF32(dtype.AsF32(c), dtype.AsU16(s.b))
	case dtype.BF16:
		kernels.BF16ToF32(dtype.AsF32(c), dtype.AsU16(s.b))
	}
	return c, nil
}
