package optim

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
)

// UndoOp is the op label of the undo copies StepParam allocates on the
// host device (tag optimizer, scope the parameter's name).
const UndoOp = "step_undo"

// Undo holds what StepParam changed and how to put it back: a copy of the
// parameter (and, when they existed before the update, its master copy
// and its state) as tensors on a host device, byte for byte as stored,
// allocated through that device's allocator. Exactly one of Restore and
// Release must be called; both free the copies.
type Undo struct {
	saved []copyOf
	reset func() // puts back what is not bytes: the update count, new state
}

// copyOf is tensor t's bytes, held by c on the host device.
type copyOf struct{ t, c *autograd.Tensor }

// Bytes returns the bytes the copies hold on the host device.
func (u *Undo) Bytes() int64 {
	var n int64
	for _, s := range u.saved {
		n += s.c.Bytes()
	}
	return n
}

// Restore writes the copies back into their tensors, undoes the rest of
// the update and frees the copies.
func (u *Undo) Restore() {
	for _, s := range u.saved {
		s.t.CopyFrom(s.c)
	}
	u.reset()
	u.Release()
}

// Release frees the copies: the update stays.
func (u *Undo) Release() {
	for _, s := range u.saved {
		s.c.Release()
	}
	u.saved = nil
}

// saveUndo copies ts (contiguous) to host through autograd's transfer
// path (Tensor.CopyFrom: on the way the bytes pass through one transient
// host buffer of at most autograd.TransferChunk). name is the scope of the copies' label. When host
// cannot hold them it frees those it made and returns the error: nothing
// has changed. The caller sets the undo's reset.
func saveUndo(kind, name string, host *device.Device, ts []*autograd.Tensor) (*Undo, error) {
	if host == nil {
		return nil, fmt.Errorf("%s: step_param: parameter %q: no host device for the undo copies (want one, e.g. cpu:100)", kind, name)
	}
	u := &Undo{}
	err := autograd.Try(func() {
		for _, t := range ts {
			c := autograd.New(host, t.DType(), device.Optimizer, t.Shape()...)
			c.Block().Relabel(UndoOp, name)
			u.saved = append(u.saved, copyOf{t: t, c: c})
			c.CopyFrom(t)
		}
	})
	if err != nil {
		u.Release()
		return nil, fmt.Errorf("%s: step_param: copying parameter %q and its state to %s for the undo (nothing was changed): %w", kind, name, host, err)
	}
	return u, nil
}
