package optim

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// Step applies one update to every parameter that has a gradient, after
// checking all of them and allocating any missing state; on error nothing
// has changed. It bumps the version of every tensor it writes.
func (a *Adam8bit) Step() error {
	work, err := a.pending()
	if err != nil {
		return err
	}
	if a.small != nil {
		if _, err := a.small.pending(); err != nil {
			return err
		}
	}
	if err := a.allocate(work); err != nil {
		return err
	}
	if a.small != nil {
		if err := a.small.Step(); err != nil { // checks everything before it writes
			return err
		}
	}
	sc := a.newScratch8()
	for _, s := range work {
		s.step++
		a.update(s, sc)
		s.bump()
	}
	a.steps++
	return nil
}

// pending checks the learning rate and every quantised parameter that has
// a gradient, and returns those.
func (a *Adam8bit) pending() ([]*qslot, error) {
	if err := checkLR(a.kind, a.lr); err != nil {
		return nil, err
	}
	var work []*qslot
	for _, s := range a.quant {
		if s.t.Released() {
			return nil, fmt.Errorf("%s: step: parameter %q was released", a.kind, s.name)
		}
		if s.t.Grad() == nil {
			continue
		}
		if err := a.checkQ(s); err != nil {
			return nil, err
		}
		work = append(work, s)
	}
	return work, nil
}

// checkQ checks a quantised slot with a gradient and its state.
func (a *Adam8bit) checkQ(s *qslot) error {
	if err := checkPair(a.kind, s.name, s.t, s.t.Grad(), a.master); err != nil {
		return err
	}
	for _, st := range s.tensors() {
		if st.Released() {
			return fmt.Errorf("%s: step: state %v of %q was released outside the optimizer", a.kind, st, s.name)
		}
	}
	return nil
}

// allocate gives every slot of work without state its codes and absmax
// arrays (and master copy, initialised from the parameter): all of them, or
// none and an error.
func (a *Adam8bit) allocate(work []*qslot) error {
	var made []*autograd.Tensor
	names := a.qnames()
	err := autograd.Try(func() {
		for _, s := range work {
			if s.m != nil {
				continue
			}
			n := s.t.Len()
			nb := (n + a.block - 1) / a.block
			for i, f := range []struct {
				dt  dtype.DType
				len int
			}{{dtype.I8, n}, {dtype.I8, n}, {dtype.F32, nb}, {dtype.F32, nb}, {dtype.F32, n}}[:len(names)] {
				shape := []int{f.len}
				if names[i] == "master" { // the parameter's shape, for CopyFrom
					shape = s.t.Shape()
				}
				t := autograd.New(s.t.Device(), f.dt, device.Optimizer, shape...)
				t.Block().Relabel(names[i], s.name)
				t.SetName(names[i] + "." + s.name)
				made = append(made, t)
			}
		}
	})
	if err != nil {
		for _, t := range made {
			t.Release()
		}
		return fmt.Errorf("%s: step: allocating optimizer state (nothing was changed): %w", a.kind, err)
	}
	for _, s := range work {
		if s.m == nil {
			s.m, s.v, s.mMax, s.vMax = made[0], made[1], made[2], made[3]
			if a.master {
				s.master = made[4]
				s.master.CopyFrom(s.t)
			}
			made = made[len(names):]
		}
	}
	return nil
}

// bump bumps the version of the parameter and of every state tensor.
func (s *qslot) bump() {
	s.t.Block().Bump()
	for _, t := range s.tensors() {
		t.Block().Bump()
	}
}

// scratch8 is the host scratch of one Step: one block of the parameter,
// gradient and both moments as float32, and of both code arrays (and, with
// master weights, of the 16-bit gradient).
type scratch8 struct {
	p, g, m, v []float32
	mc, vc     []byte    // the codes
	max        []float32 // one absmax
	g16        []byte    // 2·block bytes with master weights, else nil
}

func (a *Adam8bit) newScratch8() *scratch8 {
	block := a.block
	sc := &scratch8{p: make([]float32, block), g: make([]float32, block), m: make([]float32, block),
		v: make([]float32, block), mc: make([]byte, block), vc: make([]byte, block), max: make([]float32, 1)}
	if a.master {
		sc.g16 = make([]byte, 2*block)
	}
	return sc
}

// update runs the Adam update of s block by block; with master weights it
// updates the master and rounds it into the parameter.
func (a *Adam8bit) update(s *qslot, sc *scratch8) {
	k := s.t.Device().Kernels()
	if k == nil { // a device without data (meta): nothing to compute
		return
	}
	a.updateBlocks(k, s, sc)
	if s.master != nil {
		s.t.CopyFrom(s.master)
	}
}

// updateBlocks runs the Adam update of s's F32 target block by block.
func (a *Adam8bit) updateBlocks(k device.Kernels, s *qslot, sc *scratch8) {
	p32 := s.target()
	args := kernels.AdamUpdateArgs{LR: a.lr, Beta1: a.beta1, Beta2: a.beta2, Eps: a.eps,
		WeightDecay: a.wd, Step: s.step, Decoupled: a.decoupled}
	n := s.t.Len()
	for j, off := 0, 0; off < n; j, off = j+1, off+a.block {
		l := min(a.block, n-off)
		p, g, m, v, mc, vc := sc.p[:l], sc.g[:l], sc.m[:l], sc.v[:l], sc.mc[:l], sc.vc[:l]
		k.Read(dtype.Bytes(p), slice(p32, off, l))
		readGrad(k, g, slice(s.t.Grad(), off, l), sc.g16)
		k.Read(mc, slice(s.m, off, l))
		k.Read(vc, slice(s.v, off, l))
		signedMap.dequantiseBlock(m, mc, readMax(k, s.mMax, j, sc.max))
		unsignedMap.dequantiseBlock(v, vc, readMax(k, s.vMax, j, sc.max))
		kernels.AdamUpdate(p, g, m, v, args)
		sc.max[0] = signedLookup.quantiseBlock(mc, m)
		k.Write(slice(s.mMax, j, 1), dtype.Bytes(sc.max))
		sc.max[0] = unsignedLookup.quantiseBlock(vc, v)
		k.Write(slice(s.vMax, j, 1), dtype.Bytes(sc.max))
		k.Write(slice(p32, off, l), dtype.Bytes(p))
		k.Write(slice(s.m, off, l), mc)
		k.Write(slice(s.v, off, l), vc)
	}
}

// readGrad reads the gradient operand g into dst as float32: directly when
// it is F32, through raw (2 bytes an element) when it is 16-bit.
func readGrad(k device.Kernels, dst []float32, g device.Operand, raw []byte) {
	if g.DType == dtype.F32 {
		k.Read(dtype.Bytes(dst), g)
		return
	}
	raw = raw[:2*len(dst)]
	k.Read(raw, g)
	dtype.ToF32(dst, g.DType, raw)
}

// readMax reads absmax j of t through the one-element buffer buf.
func readMax(k device.Kernels, t *autograd.Tensor, j int, buf []float32) float32 {
	k.Read(dtype.Bytes(buf), slice(t, j, 1))
	return buf[0]
}

// slice is the operand of elements [off, off+l) of the contiguous t.
func slice(t *autograd.Tensor, off, l int) device.Operand {
	return device.Operand{Block: t.Block(), Off: t.Offset() + off, DType: t.DType(), Shape: []int{l}}
}
